"""The lab's live mode: after `lab up`, a detached `lab workload run --live` keeps submitting the
blueprint's plausible workload until `lab down` (or `lab up --no-workload`) stops it.

Its pid and log live in the lab's state directory (:mod:`lab.attach.detached`), so any later `lab`
command can find it. Before its first job it may wait for pyslurm's wheel (built once, a few minutes):
it says so in its phase file, which `lab status` reads.
"""

from __future__ import annotations

import time
from pathlib import Path

from lab.attach import detached
from lab.paths import lab_state_dir

NAME = "workload"


def _via_file(lab: str) -> Path:
    return lab_state_dir(lab) / "workload.via"


def _phase_file(lab: str) -> Path:
    return lab_state_dir(lab) / "workload.phase"


def log_file(lab: str) -> Path:
    return detached.log_file(lab, NAME)


def running_pid(lab: str) -> int | None:
    return detached.running_pid(lab, NAME)


def submit_way(lab: str) -> str | None:
    """How the running live workload reaches Slurm (pyslurm or slurmrestd); None when none runs."""
    if running_pid(lab) is None or not _via_file(lab).exists():
        return None
    return _via_file(lab).read_text(encoding="ascii").strip()


def note_phase(lab: str, phase: str | None) -> None:
    """What the live workload does before its first job (``None``: it submits)."""
    if phase is None:
        _phase_file(lab).unlink(missing_ok=True)
    else:
        _phase_file(lab).write_text(f"{phase} (since {time.strftime('%H:%M:%S')})\n", encoding="utf-8")


def phase(lab: str) -> str | None:
    """What the live workload last said before its first job (while it runs: what it waits for; once
    it stopped: why), or None (it submits, or said nothing)."""
    if not _phase_file(lab).exists():
        return None
    return _phase_file(lab).read_text(encoding="utf-8").strip()


def start(lab: str, blueprint: Path, submit_via: str = "pyslurm") -> int:
    """Start the live workload unless it already runs the same way; returns its pid. One that runs
    another way into Slurm is stopped first (`lab up --submit-via slurmrestd` switches it)."""
    pid = running_pid(lab)
    if pid is not None and submit_way(lab) in (submit_via, None):
        return pid
    if pid is not None:
        stop(lab)
    _phase_file(lab).unlink(missing_ok=True)  # why an earlier one stopped
    # The lab is the blueprint's `name`. Progress lines stay: the log is the record of what the
    # workload submitted and cancelled (`lab drill` reads it), a line or two per job.
    args = ["workload", "run", "--live", "--blueprint", str(blueprint), "--submit-via", submit_via]
    pid = detached.start(lab, NAME, args)
    _via_file(lab).write_text(f"{submit_via}\n", encoding="ascii")
    return pid


def stop(lab: str) -> bool:
    """SIGTERM the live workload and wait for it; True when one was running."""
    stopped = detached.stop(lab, NAME)
    _via_file(lab).unlink(missing_ok=True)
    _phase_file(lab).unlink(missing_ok=True)
    return stopped
