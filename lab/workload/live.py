"""The workload against a running lab: its slurmrestd URL, per-user tokens, where the job classes go,
and where an endless (live) plan starts in the week. ``lab up`` runs the live mode as a process,
``lab workload run --live`` (see lab/workload/background.py)."""

from __future__ import annotations

import time
from pathlib import Path

import docker

from lab import contract
from lab.bringup import containers, lifecycle
from lab.bringup.slurmrestd import Credentials, issue_token
from lab.workload.plan import DAY_S
from lab.workload.submit import RestClient


def week_offset_now(epoch_s: float) -> float:
    """Seconds since local Monday 00:00 at ``epoch_s``: where a live plan starts in the week."""
    local = time.localtime(epoch_s)
    return float(local.tm_wday * DAY_S + local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec)


def job_classes_path(lab: str) -> Path:
    """Where the runner keeps ``{"<job id>": "<class>"}`` for the DCGM shim: the lab's shared
    directory, which every node container sees read-only at ``contract.SHARED_MOUNT`` and whose
    ``jobs/classes.json`` the dcgm_shim role passes as ``--job-classes``."""
    return contract.shared_dir(lab) / "jobs" / "classes.json"


def connect(client: docker.DockerClient, lab: str) -> RestClient:
    """A :class:`RestClient` for the lab's slurmrestd, with tokens signed by its slurmctld."""
    controller = containers.find_container(client, lab, "controller")
    if controller is None:
        raise lifecycle.LabError(f"lab '{lab}' has no controller container. Fix: `lab up`.")
    url = lifecycle.endpoints(client, lab).get("slurmrestd")
    if url is None:
        raise lifecycle.LabError(f"lab '{lab}' publishes no slurmrestd port. Fix: `lab up` again.")

    def token(user: str) -> Credentials:
        return issue_token(controller, user)

    return RestClient(url, token)
