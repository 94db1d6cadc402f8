"""The fault files the host writes for one GPU (``<dir>/<node>/<gpu>``: an XID code, a throttle cause)
and the shim reads on every scrape. Writes are atomic (the shim never reads half a file); a file the
shim cannot read is logged and ignored, because fault injection must never fail a scrape."""

from __future__ import annotations

import logging
from pathlib import Path

from lab.paths import atomic_write


def write_fault(fault_dir: Path, node: str, gpu: int, text: str) -> Path:
    """Replace ``node``'s file for GPU ``gpu``. Mode 0644: the shim and lab-gpu-app (as the job's
    user) read it."""
    path = fault_dir / node / str(gpu)
    atomic_write(path, f"{text}\n", mode=0o644)
    return path


def read_fault(fault_dir: Path, node: str, gpu: int, what: str, log: logging.Logger) -> str | None:
    """The stripped text of ``node``'s file for GPU ``gpu``; None when there is none, or when it cannot
    be read (logged, naming ``what`` the file is)."""
    path = fault_dir / node / str(gpu)
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        log.warning("Cannot read %s file %s: %s; ignored", what, path, error)
        return None
