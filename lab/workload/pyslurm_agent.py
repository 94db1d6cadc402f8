"""The workload generator's hands in the lab: pyslurm calls, one JSON line in, one JSON line out.

This file runs *inside* the controller (``docker exec -i -u <user> … python3 -u pyslurm_agent.py``), as
the plan user whose jobs it submits and cancels, or as root to read job states and accounting; munge
authenticates each call as that user, as ``sbatch`` and ``scancel`` would be. It needs only the standard
library and pyslurm, unpacked beside it in ``site/`` (:mod:`lab.workload.pyslurm_install`), and imports
nothing of the lab.

Requests and answers (the host side is :class:`lab.workload.pyslurm_client.PyslurmClient`)::

    {"op": "submit", "fields": {…JobSubmitDescription attributes…}}  → {"ok": true, "job_id": 8}
    {"op": "cancel", "job_id": 8}                                     → {"ok": true}
    {"op": "states"}                                 → {"ok": true, "states": {"8": "RUNNING"}}
    {"op": "start_time", "job_id": 8}                → {"ok": true, "start_time": 1796034303}
    {"op": "accounting", "since": 1796034000}        → {"ok": true, "jobs": [{"job_id": 8, …}]}

A refusal is ``{"ok": false, "errno": 2000, "error": "Invalid partition name specified"}``: pyslurm's
``RPCError`` carries Slurm's errno and ``slurm_strerror`` text; pyslurm's own checks raise ``ValueError``
(``errno`` null). The first line the agent writes says it is ready, or why it cannot be.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from typing import Any

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")


def submit(pyslurm: Any, request: dict[str, Any]) -> dict[str, Any]:
    return {"job_id": int(pyslurm.JobSubmitDescription(**request["fields"]).submit())}


def cancel(pyslurm: Any, request: dict[str, Any]) -> dict[str, Any]:
    # pyslurm's Job.cancel is slurm_kill_job with SIGKILL (scancel); it already ignores "already done"
    # and "invalid job id" (purged after MinJobAge), as the runner wants.
    pyslurm.Job(int(request["job_id"])).cancel()
    return {}


def states(pyslurm: Any, _request: dict[str, Any]) -> dict[str, Any]:
    """Every job slurmctld still holds (REQUEST_JOB_INFO, as ``squeue``), id → pyslurm's state name."""
    return {"states": {str(job.id): job.state for job in pyslurm.Jobs.load().values()}}


def start_time(pyslurm: Any, request: dict[str, Any]) -> dict[str, Any]:
    return {"start_time": pyslurm.Job.load(int(request["job_id"])).start_time}


def accounting(pyslurm: Any, request: dict[str, Any]) -> dict[str, Any]:
    """slurmdbd's records since ``since`` (as ``sacct -S``), in the shape of slurmrestd's v0.0.42
    ``/slurmdb/jobs/`` records that the run summary reads (0 for a time slurmdbd has not set)."""
    found = pyslurm.db.Jobs.load(pyslurm.db.JobFilter(start_time=int(request["since"])))
    return {
        "jobs": [
            {
                "job_id": job.id,
                "state": {"current": [job.state]},
                "time": {
                    "submission": job.submit_time or 0,
                    "start": job.start_time or 0,
                    "end": job.end_time or 0,
                },
            }
            for job in found.values()
        ]
    }


OPERATIONS = {
    "submit": submit,
    "cancel": cancel,
    "states": states,
    "start_time": start_time,
    "accounting": accounting,
}


def answer(request: dict[str, Any], pyslurm: Any) -> dict[str, Any]:
    """One request's answer; a refusal or a fault of pyslurm is an answer too, never an exit."""
    operation = OPERATIONS.get(str(request.get("op")))
    if operation is None:
        return {"ok": False, "errno": None, "error": f"unknown op {request.get('op')!r}"}
    try:
        return {"ok": True, **operation(pyslurm, request)}
    except pyslurm.RPCError as error:
        return {"ok": False, "errno": error.errno, "error": str(error.msg)}
    except Exception as error:  # pyslurm's own checks (ValueError) and its defects (NameError …)
        return {"ok": False, "errno": None, "error": f"{type(error).__name__}: {error}"}


def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> int:
    sys.path.insert(0, SITE)
    user = pwd.getpwuid(os.getuid()).pw_name
    try:
        import pyslurm  # type: ignore[import-not-found]  # unpacked in SITE, not on the host
    except Exception as error:
        _say({"ok": False, "errno": None, "error": f"cannot import pyslurm from {SITE}: {error}"})
        return 1
    _say({"ok": True, "ready": True, "pyslurm": pyslurm.__version__, "user": user})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            _say({"ok": False, "errno": None, "error": f"not a JSON request: {error}"})
            continue
        _say(answer(request, pyslurm))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
