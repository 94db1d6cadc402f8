"""The lab's live mode: after `lab up`, a detached `lab workload run --live` keeps submitting the
blueprint's plausible workload until `lab down` (or `lab up --no-workload`) stops it.

Its pid and log live in the lab's state directory, so any later `lab` command can find it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from lab.paths import lab_state_dir

STOP_TIMEOUT_S = 20


def _pid_file(lab: str) -> Path:
    return lab_state_dir(lab) / "workload.pid"


def _via_file(lab: str) -> Path:
    return lab_state_dir(lab) / "workload.via"


def log_file(lab: str) -> Path:
    return lab_state_dir(lab) / "workload.log"


def running_pid(lab: str) -> int | None:
    try:
        pid = int(_pid_file(lab).read_text(encoding="ascii").strip())
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return None if state == "Z" else pid  # a zombie has exited; its parent just has not reaped it


def submit_way(lab: str) -> str | None:
    """How the running live workload reaches Slurm (pyslurm or slurmrestd); None when none runs."""
    if running_pid(lab) is None or not _via_file(lab).exists():
        return None
    return _via_file(lab).read_text(encoding="ascii").strip()


def start(lab: str, blueprint: Path, submit_via: str = "pyslurm") -> int:
    """Start the live workload unless it already runs the same way; returns its pid. One that runs
    another way into Slurm is stopped first (`lab up --submit-via slurmrestd` switches it)."""
    pid = running_pid(lab)
    if pid is not None and submit_way(lab) in (submit_via, None):
        return pid
    if pid is not None:
        stop(lab)
    with log_file(lab).open("ab") as log:
        process = subprocess.Popen(
            # The lab is the blueprint's `name`. Progress lines stay: the log is the record of what the
            # workload submitted and cancelled (`lab drill` reads it), a line or two per job.
            [
                sys.executable,
                "-m",
                "lab",
                "workload",
                "run",
                "--live",
                "--blueprint",
                str(blueprint),
                "--submit-via",
                submit_via,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # outlives `lab up`, like the daemons it feeds
        )
    _pid_file(lab).write_text(f"{process.pid}\n", encoding="ascii")
    _via_file(lab).write_text(f"{submit_via}\n", encoding="ascii")
    return process.pid


def stop(lab: str) -> bool:
    """SIGTERM the live workload and wait for it; True when one was running."""
    pid = running_pid(lab)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline and running_pid(lab) is not None:
        time.sleep(0.2)
    if running_pid(lab) is not None:
        os.kill(pid, signal.SIGKILL)
    _pid_file(lab).unlink(missing_ok=True)
    _via_file(lab).unlink(missing_ok=True)
    return True
