"""The workload against a running lab: its slurmrestd URL, per-user tokens, and the background mode.

``lab up`` can start the workload as the lab's live mode with :func:`start` (a thread) or by
spawning ``lab workload run --live`` (a process); both stop cleanly when told to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import docker

from lab import cluster, lifecycle
from lab.blueprint import Blueprint
from lab.slurmrestd import Credentials, issue_token
from lab.workload.plan import DAY_S, Model
from lab.workload.runner import RunOptions, run
from lab.workload.submit import NodeShape, RestClient
from lab.workload.summary import RunSummary

TOKEN_LIFESPAN_S = 3600


def week_offset_now(epoch_s: float) -> float:
    """Seconds since local Monday 00:00 at ``epoch_s``: where a live plan starts in the week."""
    local = time.localtime(epoch_s)
    return float(local.tm_wday * DAY_S + local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec)


def job_classes_path(lab: str) -> Path:
    """Where the runner keeps ``{"<job id>": "<class>"}`` for the DCGM shim: the lab's shared
    directory, which every node container sees read-only at ``cluster.SHARED_MOUNT`` and whose
    ``jobs/classes.json`` the dcgm_shim role passes as ``--job-classes``."""
    return cluster.shared_dir(lab) / "jobs" / "classes.json"


def connect(client: docker.DockerClient, lab: str) -> RestClient:
    """A :class:`RestClient` for the lab's slurmrestd, with tokens signed by its slurmctld."""
    controller = cluster.find_container(client, lab, "controller")
    if controller is None:
        raise lifecycle.LabError(f"lab '{lab}' has no controller container. Fix: `lab up`.")
    url = lifecycle.endpoints(client, lab).get("slurmrestd")
    if url is None:
        raise lifecycle.LabError(f"lab '{lab}' publishes no slurmrestd port. Fix: `lab up` again.")

    def token(user: str) -> Credentials:
        return issue_token(controller, user, TOKEN_LIFESPAN_S)

    return RestClient(url, token)


def start(
    blueprint: Blueprint,
    stop: threading.Event,
    *,
    client: docker.DockerClient,
    job_classes: Path | None = None,
    time_scale: float | None = None,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> threading.Thread:
    """Run the blueprint's workload endlessly in a daemon thread until ``stop`` is set.

    The thread's summary is logged through ``progress`` when it ends; errors too (a live workload
    never takes the caller down).
    """
    model = Model(blueprint)
    scale = time_scale if time_scale is not None else model.spec.time_scale
    chosen_seed = seed if seed is not None else model.spec.seed
    say = progress or (lambda _message: None)
    rest = connect(client, blueprint.name)
    classes = job_classes if job_classes is not None else job_classes_path(blueprint.name)

    def body() -> None:
        try:
            summary: RunSummary = run(
                model.jobs(chosen_seed, week_offset_now(time.time())),
                rest,
                time_scale=scale,
                shape=NodeShape.of(blueprint),
                seed=chosen_seed,
                stop=stop,
                job_classes=classes,
                options=RunOptions(drain=False),
                progress=say,
                trace_queue=(model.spec.queue.median_s, model.spec.queue.mean_s),
            )
            say(summary.text())
        except Exception as error:  # reported, not raised: this is a background thread
            say(f"live workload stopped: {error}")

    thread = threading.Thread(target=body, name=f"workload-{blueprint.name}", daemon=True)
    thread.start()
    return thread
