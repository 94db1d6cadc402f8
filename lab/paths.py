"""Where the lab finds its own files and keeps per-lab state, and how it replaces a file that others read."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The package lives at <project>/lab; ansible/, containers/ and blueprints/ sit beside it.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
ANSIBLE_DIR = PROJECT_ROOT / "ansible"
CONTAINERS_DIR = PROJECT_ROOT / "containers"
BLUEPRINTS_DIR = PROJECT_ROOT / "blueprints"
DEFAULT_BLUEPRINT = BLUEPRINTS_DIR / "default.yaml"
# The unmodified upstream tag archives beside the checkout (../shared/vendor/PROVENANCE.md).
VENDOR_DIR = PROJECT_ROOT.parent / "shared" / "vendor"


def state_root() -> Path:
    """Per-lab state (keys, rendered inventory, logs): ``$AIFACTORY_LAB_STATE`` or ``<project>/.lab``."""
    return Path(os.environ.get("AIFACTORY_LAB_STATE", PROJECT_ROOT / ".lab"))


def lab_state_dir(lab_name: str) -> Path:
    return state_root() / lab_name


def atomic_write(path: Path, text: str, mode: int | None = None) -> None:
    """Replace ``path`` with ``text`` so that a concurrent reader sees the old file or the new one,
    never a part (temporary dot file in the same directory, then rename). ``mode``: else 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
