"""The workload against the live default lab: a short compressed run through pyslurm (the default
way), and bad input through both ways.

The run uses a *test shape* of the default blueprint's workload, not a plausible one: 20 jobs per GPU
per day, every outcome a third of the jobs (half the failures timeouts), jobs of at most one node,
and time compressed 600× (an hour of plan in six seconds). Seed 7 plans jobs in which every outcome
appears (the plan begins with those a cluster would have running). The plausible workload itself, at
real time, is tested in test_workload_live.py. The run takes about 90 s: Slurm limits are whole
minutes and it enforces them on a 30-second cycle, so the timeout job ends 60-90 s after it starts.
"""

from __future__ import annotations

import copy
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from statistics import fmean

import docker
import pytest
from testinfra.host import Host

from lab import kinds
from lab.blueprint import hostlist
from lab.blueprint.slurm_blueprint import Blueprint, parse
from lab.progress import Progress
from lab.workload.plan import Plan, PlannedJob, lab_limit_minutes, plan
from lab.workload.runner import RunOptions, run
from lab.workload.submit import NodeShape
from lab.workload.submitters import connect
from lab.workload.summary import RunSummary
from tests.unit.workload.workload_testing import synthetic_trace

pytestmark = pytest.mark.lab

SEED = 7
SCALE = 600.0


@dataclass
class Ran:
    plan: Plan
    summary: RunSummary
    classes_seen: list[dict[str, str]]
    sacct: dict[int, dict[str, str]]


def _test_shape(lab: Blueprint) -> Blueprint:
    data = copy.deepcopy(lab.model_dump(mode="json", exclude_none=True))
    workload = data["workload"]
    workload["time_scale"] = SCALE
    workload["trace"] = synthetic_trace(rate=20)
    workload["timeout_share_of_failed"] = 0.5
    return parse(data)


@pytest.fixture(scope="module")
def ran(
    default_lab: Blueprint,
    engine: docker.DockerClient,
    host: Callable[[str], Host],
    tmp_path_factory: pytest.TempPathFactory,
) -> Ran:
    blueprint = _test_shape(default_lab)
    planned = plan(blueprint, hours=0.5, seed=SEED)
    assert {job.outcome for job in planned.jobs} == {"completed", "failed", "cancelled", "timeout"}
    classes = tmp_path_factory.mktemp("workload") / "job-classes.json"
    seen: list[dict[str, str]] = []

    def progress(_message: str) -> None:
        if classes.exists():
            seen.append(json.loads(classes.read_text()))

    client = connect(kinds.attach(engine, default_lab.name), "pyslurm", Progress(quiet=True))
    try:
        summary = run(
            planned.jobs,
            client,
            time_scale=SCALE,
            shape=NodeShape.of(blueprint),
            seed=SEED,
            planned=len(planned.jobs),
            job_classes=classes,
            progress=progress,
        )
    finally:
        client.close()
    ids = ",".join(str(job_id) for job_id in summary.job_ids.values())
    fields = (
        "JobID,JobName,State,User,Account,Partition,QOS,"
        "Timelimit,NNodes,ReqTRES,AllocTRES,Submit,Start,NodeList"
    )
    lines = host("controller").check_output(f"sacct -X -n -P -j {ids} -o {fields}").splitlines()
    sacct = {
        int(row["JobID"]): row
        for row in (dict(zip(fields.split(","), line.split("|"), strict=True)) for line in lines)
    }
    return Ran(planned, summary, seen, sacct)


def test_every_planned_job_runs_as_its_planned_user(ran: Ran) -> None:
    assert ran.summary.submitted == len(ran.plan.jobs) and ran.summary.rejected == 0
    for job in ran.plan.jobs:
        row = ran.sacct[ran.summary.job_ids[job.index]]
        assert (row["User"], row["Account"], row["Partition"], row["QOS"]) == (
            job.user,
            job.account,
            job.partition,
            job.qos,
        )


def test_slurm_accounts_every_field_the_plan_asked_for(ran: Ran, default_lab: Blueprint) -> None:
    """GPUs, nodes, time limit and name as planned; CPUs and memory per GPU as the node shape says.
    The memory is the partition's DefMemPerGPU (pyslurm v24.11.0 cannot send memory_per_gpu), so it is
    in what the job was given (AllocTRES); its request (ReqTRES) names the node's, as for any job that
    asks for no memory."""
    shape = NodeShape.of(default_lab)
    for job in ran.plan.jobs:
        row = ran.sacct[ran.summary.job_ids[job.index]]
        asked = dict(item.split("=", 1) for item in row["ReqTRES"].split(","))
        assert row["JobName"] == job.workload_class
        assert asked["gres/gpu"] == str(job.gpus) and asked["cpu"] == str(job.gpus * shape.cpus_per_gpu)
        if row["AllocTRES"]:  # a job cancelled while pending was given nothing
            given = dict(item.split("=", 1) for item in row["AllocTRES"].split(","))
            assert given["gres/gpu"] == str(job.gpus)
            assert _megabytes(given["mem"]) == pytest.approx(job.gpus * shape.memory_per_gpu_mb, rel=0.001)
        minutes = lab_limit_minutes(job.time_limit_s, SCALE)
        assert row["Timelimit"] == f"{minutes // 60:02d}:{minutes % 60:02d}:00"
        if job.nodes > 1:
            assert row["NNodes"] == str(job.nodes)


def test_every_outcome_class_ends_in_its_slurm_state(ran: Ran) -> None:
    expected = {"completed": "COMPLETED", "failed": "FAILED", "cancelled": "CANCELLED", "timeout": "TIMEOUT"}
    for job in ran.plan.jobs:
        state = ran.sacct[ran.summary.job_ids[job.index]]["State"].split()[0]
        assert state == expected[job.outcome], job
    assert ran.summary.as_planned == ran.summary.submitted


def test_the_summary_agrees_with_sacct(ran: Ran) -> None:
    states = Counter(row["State"].split()[0] for row in ran.sacct.values())
    assert ran.summary.by_state == dict(states)
    for state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
        assert ran.summary.count(state) >= 1
    assert ran.summary.started == len(ran.sacct)
    waits = [_epoch(row["Start"]) - _epoch(row["Submit"]) for row in ran.sacct.values()]
    assert ran.summary.mean_queue_wait_s == pytest.approx(fmean(waits))
    assert ran.summary.unaccounted == 0
    assert f"submitted  {len(ran.plan.jobs)} of {len(ran.plan.jobs)} planned" in ran.summary.text()


def test_cancellations_come_from_the_jobs_owner_through_slurm(ran: Ran, default_lab: Blueprint) -> None:
    uid = {user.name: user.uid for user in default_lab.all_users}
    for job in ran.plan.jobs:
        if job.outcome == "cancelled":
            assert ran.sacct[ran.summary.job_ids[job.index]]["State"] == f"CANCELLED by {uid[job.user]}"


def test_job_output_carries_the_job_id_and_ends_as_planned(ran: Ran, host: Callable[[str], Host]) -> None:
    endings = {
        "completed": 'msg="job finished"',
        "failed": "level=ERROR",
        "cancelled": "CANCELLED AT",
        "timeout": "DUE TO TIME LIMIT",
    }
    for job in ran.plan.jobs:
        job_id = ran.summary.job_ids[job.index]
        # The batch step, which writes the output, runs on the allocation's first node. A job of at most
        # 8 GPUs is submitted without --nodes, so Slurm may spread it over two nodes (dgx-[002,004]).
        node = hostlist.expand(ran.sacct[job_id]["NodeList"])[0]
        out_file = host(node).file(f"/tmp/workload-{job_id}.out")
        # A job cancelled a moment after it starts (at 600x, a few planned minutes) may end before its
        # batch step opens the file, or before the application's first line, as a real one can; its
        # cancellation is checked in sacct above. Every other job logs.
        if job.outcome == "cancelled" and not out_file.exists:
            continue
        output = out_file.content_string
        logged = [line for line in output.splitlines() if line.startswith("time=")]
        assert logged or job.outcome == "cancelled", output
        assert all(f" job_id={job_id} " in line for line in logged), output
        assert endings[job.outcome] in output, output
        if job.outcome == "failed":
            assert ("Traceback" in output) or ("NCCL" in output), output
        if job.outcome in ("cancelled", "timeout"):
            assert f"*** JOB {job_id} ON {node} CANCELLED AT" in output  # slurmstepd's own line


def test_the_job_classes_file_named_the_running_jobs(ran: Ran) -> None:
    by_id = {str(ran.summary.job_ids[job.index]): job.workload_class for job in ran.plan.jobs}
    assert any(len(classes) > 1 for classes in ran.classes_seen)
    for classes in ran.classes_seen:
        assert classes.items() <= by_id.items()


@pytest.mark.parametrize("way", ["pyslurm", "slurmrestd"])
def test_bad_input_names_the_job_and_field_and_the_run_goes_on(
    way: str, default_lab: Blueprint, engine: docker.DockerClient
) -> None:
    user = default_lab.all_users[0]
    good = PlannedJob(
        0, 0.0, "inference", user.name, user.account, "gpu", "normal", 1, 1, 60.0, 600, "completed"
    )
    unknown = replace(good, index=1, partition="nosuch")
    too_many = replace(good, index=2, partition="debug", gpus=16)  # debug is one node of 8 GPUs
    after = replace(good, index=3, submit_s=1.0)
    client = connect(kinds.attach(engine, default_lab.name), way, Progress(quiet=True))
    try:
        summary = run(
            [good, unknown, too_many, after],
            client,
            time_scale=SCALE,
            shape=NodeShape.of(default_lab),
            seed=SEED,
            options=RunOptions(drain=True),
        )
    finally:
        client.close()
    assert summary.submitted == 2 and summary.count("COMPLETED") == 2, summary.text()
    refused_partition, refused_gpus = summary.rejections
    who = f"{user.name}/{user.account}"
    assert refused_partition.startswith(f"plan job 1 ({who}, field partition='nosuch'): ")
    assert "Invalid partition name specified" in refused_partition and "Fix:" in refused_partition
    assert refused_gpus.startswith(f"plan job 2 ({who}, field gpus=16): ")
    assert "Fix:" in refused_gpus


def _megabytes(amount: str) -> float:
    """sacct's ``mem=`` of ReqTRES (``1000000M``, ``1953.12G``) in megabytes, as Slurm counts them."""
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    return float(amount[:-1]) * units[amount[-1]]


def _epoch(stamp: str) -> float:
    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))
