"""Processes that work beside a lab while `lab up` brings it up and after it has returned: the live
workload, the builds and installs of Prometheus' web UI and of the fence (:class:`BackgroundInstall`).
Each is a detached ``python -m lab …`` with its pid and log in the lab's state directory
(``<name>.pid``, ``<name>.log``), so any later `lab` command finds it and `lab down` stops it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lab.bringup import lock
from lab.paths import lab_state_dir
from lab.progress import Progress

STOP_TIMEOUT_S = 20
# A bring-up from nothing on a loaded machine (images, Ansible) is minutes; an hour is a lab up that hangs.
BRING_UP_WAIT_S = 3600


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


@dataclass(frozen=True)
class BackgroundInstall:
    """Something `lab up` leaves to a detached `lab <command>` that builds it and installs it into the
    running lab (Prometheus' web UI, the fence): its status line for `lab status`, kept in the lab's
    state directory, and the process that works on it."""

    name: str  # the detached process: <name>.pid, <name>.log
    status_name: str  # its status line's file in the lab's state directory
    retry: str  # the command that builds and installs it again, for `lab status`

    def status_file(self, lab: str) -> Path:
        return lab_state_dir(lab) / self.status_name

    def say(self, lab: str, line: str) -> None:
        self.status_file(lab).parent.mkdir(parents=True, exist_ok=True)
        self.status_file(lab).write_text(line + "\n", encoding="utf-8")

    def launch(self, lab: str, lab_args: Sequence[str], meanwhile: str) -> tuple[int, str]:
        """Start ``python -m lab <lab_args>`` unless it runs already; its pid and the status line
        written (being built since …, ``meanwhile``: what the lab does until it is installed)."""
        pid = running_pid(lab, self.name)
        if pid is None:
            pid = start(lab, self.name, lab_args)
        line = (
            f"being built in the background since {time.strftime('%H:%M:%S')} (pid {pid}, log "
            f"{log_file(lab, self.name)}); {meanwhile}"
        )
        self.say(lab, line)
        return pid, line

    @contextmanager
    def after_bring_up(self, lab: str, what: str, progress: Progress) -> Iterator[None]:
        """The lab's lock, for `lab <what>`'s install: `lab up` starts this process before it provisions
        and holds the lock until the lab is up, so the install waits for it (BRING_UP_WAIT_S at most)."""
        with lock.waited_for(lab_state_dir(lab), lab, what, BRING_UP_WAIT_S, progress):
            yield

    def status(self, lab: str) -> str | None:
        """The status line, once a `lab up` wrote one; a background build that ended without its last
        word (killed, the machine restarted) says so instead of "being built" for ever."""
        if not self.status_file(lab).is_file():
            return None
        line = self.status_file(lab).read_text(encoding="utf-8").strip()
        if line.startswith("being built") and running_pid(lab, self.name) is None:
            line = (
                f"the background build stopped before it was done (log {log_file(lab, self.name)}); "
                f"`{self.retry}` builds and installs it"
            )
        return line

    def pending(self, lab: str) -> bool:
        """Whether it is still being built or installed in the background."""
        return running_pid(lab, self.name) is not None

    def cancel(self, lab: str) -> bool:
        """Stop a background build (`lab down`); True when one was running."""
        return stop(lab, self.name)
