"""The plausible workload itself on the live default lab, at real time: the jobs a 24-GPU Helios Venus
would have running are submitted at once, and the series a user came to see appear in Prometheus.

The plan is the shipped one (seed 1, from Monday 00:00), so its running jobs are known in advance;
the test submits them through pyslurm as the live mode does, waits for Slurm and Prometheus, and
cancels them afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import takewhile

import docker
import pytest
from testinfra.host import Host

from lab import kinds, promql
from lab.blueprint.slurm_blueprint import Blueprint
from lab.progress import Progress
from lab.workload.plan import Model, PlannedJob
from lab.workload.runner import RunOptions, run
from lab.workload.submit import NodeShape
from lab.workload.submitters import connect

from .conftest import cancel_workload_jobs, wait_for

pytestmark = pytest.mark.lab

SCRAPE_WAIT_S = 90  # six scrape intervals of 15 s, and the prolog's mapping file first
FIRST_MINUTES_S = 180


@pytest.fixture(scope="module")
def prometheus(default_lab: Blueprint) -> str:
    return f"http://127.0.0.1:{default_lab.ports.prometheus}"


@pytest.fixture(scope="module")
def live(
    default_lab: Blueprint, engine: docker.DockerClient, host: Callable[[str], Host]
) -> Iterator[dict[int, PlannedJob]]:
    """Job id → planned job, for the first three minutes of the shipped plan, submitted for real."""
    model = Model(default_lab)
    assert model.spec.time_scale == 1
    planned = list(takewhile(lambda job: job.submit_s < FIRST_MINUTES_S, model.jobs(model.spec.seed)))
    client = connect(kinds.attach(engine, default_lab.name), "pyslurm", Progress(quiet=True))
    try:
        summary = run(
            planned,
            client,
            time_scale=1,
            shape=NodeShape.of(default_lab),
            seed=model.spec.seed,
            planned=len(planned),
            options=RunOptions(drain=False),
        )
    finally:
        client.close()
    yield {summary.job_ids[job.index]: job for job in planned}
    cancel_workload_jobs(host("controller"))


def test_the_plan_begins_with_jobs_running(live: dict[int, PlannedJob]) -> None:
    assert [job for job in live.values() if job.warm_s > 0], "a real cluster is never empty"


def test_slurm_runs_them_as_their_users(live: dict[int, PlannedJob], host: Callable[[str], Host]) -> None:
    controller = host("controller")
    ids = ",".join(str(job_id) for job_id in live)

    def running() -> dict[int, tuple[str, str]]:
        lines = controller.check_output(
            f"squeue --noheader --jobs={ids} --states=RUNNING --format='%i|%u|%a'"
        )
        return {int(i): (u, a) for i, u, a in (line.split("|") for line in lines.split())}

    warm = {job_id: job for job_id, job in live.items() if job.warm_s > 0}
    seen = wait_for(lambda: warm.keys() <= running().keys() and running(), 60, "the running jobs started")
    assert isinstance(seen, dict)
    for job_id, job in warm.items():
        assert seen[job_id] == (job.user, job.account)


def test_prometheus_has_per_user_queue_series(live: dict[int, PlannedJob], prometheus: str) -> None:
    users = {job.user for job in live.values() if job.warm_s > 0}
    accounts = {job.account for job in live.values() if job.warm_s > 0}

    def labelled(expr: str, label: str) -> set[str]:
        return {series.labels[label] for series in promql.query(prometheus, expr)}

    for expr, label, wanted in (
        ('slurm_queue_running{job="slurm"}', "user", users),
        ('slurm_user_jobs_running{job="slurm"}', "user", users),
        ('slurm_account_jobs_running{job="slurm"}', "account", accounts),
    ):
        wait_for(lambda: wanted <= labelled(expr, label), SCRAPE_WAIT_S, f"{expr} for {sorted(wanted)}")  # noqa: B023


def test_dcgm_series_carry_hpc_job_for_each_running_job(live: dict[int, PlannedJob], prometheus: str) -> None:
    for job_id, job in live.items():
        if job.warm_s == 0:
            continue

        def gpus() -> int:
            return len(promql.query(prometheus, f'DCGM_FI_DEV_GPU_UTIL{{hpc_job="{job_id}"}}'))  # noqa: B023

        wait_for(lambda: gpus() == job.gpus, SCRAPE_WAIT_S, f"{job.gpus} GPUs labelled hpc_job={job_id}")  # noqa: B023
