"""Processes that work beside a running lab after `lab up` has returned: the live workload, the build
and install of Prometheus' web UI. Each is a detached ``python -m lab …`` with its pid and log in the
lab's state directory (``<name>.pid``, ``<name>.log``), so any later `lab` command finds it and
`lab down` stops it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from lab.paths import lab_state_dir

STOP_TIMEOUT_S = 20


def pid_file(lab: str, name: str) -> Path:
    return lab_state_dir(lab) / f"{name}.pid"


def log_file(lab: str, name: str) -> Path:
    return lab_state_dir(lab) / f"{name}.log"


def running_pid(lab: str, name: str) -> int | None:
    """The pid of the lab's process ``name`` while it runs; None once it has exited (a zombie too)."""
    try:
        pid = int(pid_file(lab, name).read_text(encoding="ascii").strip())
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return None if state == "Z" else pid  # a zombie has exited; its parent just has not reaped it


def start(lab: str, name: str, lab_args: Sequence[str]) -> int:
    """``python -m lab <lab_args>`` detached from the caller: started by a shell that exits at once, so
    init is its parent and reaps it (no child left to the caller), in its own session, stdin closed,
    output appended to its log. Returns its pid."""
    state = lab_state_dir(lab)
    state.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "lab", *lab_args]
    shell = subprocess.run(
        ["sh", "-c", 'setsid "$@" </dev/null >>"$DETACHED_LOG" 2>&1 & echo $!', "sh", *argv],
        env={**os.environ, "DETACHED_LOG": str(log_file(lab, name))},
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(shell.stdout)
    pid_file(lab, name).write_text(f"{pid}\n", encoding="ascii")
    return pid


def stop(lab: str, name: str) -> bool:
    """SIGTERM the process and wait for it (SIGKILL after STOP_TIMEOUT_S); True when one was running."""
    pid = running_pid(lab, name)
    if pid is None:
        pid_file(lab, name).unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline and running_pid(lab, name) is not None:
        time.sleep(0.2)
    if running_pid(lab, name) is not None:
        os.kill(pid, signal.SIGKILL)
    pid_file(lab, name).unlink(missing_ok=True)
    return True
