"""The runner against an in-memory slurmrestd and a clock that jumps: timing, cancels, the classes file."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from lab.attach.slurmrestd import Credentials
from lab.dcgm.job_classes import load_job_classes
from lab.workload.plan import Model, Plan, PlannedJob, plan
from lab.workload.runner import RunOptions, run
from lab.workload.submit import NodeShape, RestClient, SubmitError
from lab.workload.summary import RunSummary

from .workload_testing import EPOCH0, FakeClock, FakeSlurmrestd, busy_blueprint, refused

SCALE = 600.0
SHAPE = NodeShape(gpus_per_node=8, cpus_per_gpu=14, memory_per_gpu_mb=250000)


@pytest.fixture
def busy_plan() -> Plan:
    return plan(busy_blueprint(), 2, seed=1)


def _client(fake: FakeSlurmrestd) -> RestClient:
    return RestClient(
        "http://lab", lambda user: Credentials(user, f"token-{user}"), fake, pause=lambda _s: None
    )


def _fake(busy_plan: Plan) -> tuple[FakeSlurmrestd, FakeClock]:
    clock = FakeClock()
    return FakeSlurmrestd(clock, busy_plan.jobs, SCALE), clock


def _run_on(
    jobs: Iterable[PlannedJob], fake: FakeSlurmrestd, clock: FakeClock, **kwargs: object
) -> RunSummary:
    return run(
        jobs,
        _client(fake),
        time_scale=SCALE,
        shape=SHAPE,
        seed=1,
        clock=clock,
        **kwargs,  # type: ignore[arg-type]
    )


def _run(busy_plan: Plan, tmp_path: Path, **kwargs: object) -> tuple[RunSummary, FakeSlurmrestd, FakeClock]:
    fake, clock = _fake(busy_plan)
    job_classes = tmp_path / "job-classes.json"
    summary = _run_on(
        busy_plan.jobs, fake, clock, planned=len(busy_plan.jobs), job_classes=job_classes, **kwargs
    )
    return summary, fake, clock


def test_every_job_is_submitted_on_time_as_its_user(busy_plan: Plan, tmp_path: Path) -> None:
    _, fake, _ = _run(busy_plan, tmp_path)
    submitted = sorted(fake.jobs.values(), key=lambda job: job.job_id)
    assert [job.plan for job in submitted] == list(busy_plan.jobs)
    for job in submitted:
        assert job.plan is not None
        assert job.user == job.plan.user and job.desc["account"] == job.plan.account
        lab_due = job.plan.submit_s / SCALE
        assert lab_due - 1e-6 <= job.submitted - EPOCH0 <= lab_due + 0.01


def test_planned_cancellations_use_slurms_cancel_after_the_planned_run(
    busy_plan: Plan, tmp_path: Path
) -> None:
    _, fake, _ = _run(busy_plan, tmp_path)
    cancels = [(path, user) for method, path, user in fake.requests if method == "DELETE"]
    cancelled = [job for job in fake.jobs.values() if job.plan and job.plan.outcome == "cancelled"]
    assert len(cancels) == len(cancelled) > 0
    for job in cancelled:
        assert (f"/slurm/v0.0.42/job/{job.job_id}", job.user) in cancels
        assert job.state == "CANCELLED" and job.ended is not None and job.plan is not None
        # Slurm's start time has whole seconds, so the cancel may come up to a second early.
        assert job.ended - job.started == pytest.approx(job.plan.duration_s / SCALE, abs=1.0)


def test_the_summary_comes_from_accounting_and_matches_the_plan(busy_plan: Plan, tmp_path: Path) -> None:
    summary, _, clock = _run(busy_plan, tmp_path, trace_queue=(1.0, 446.0))
    planned = Counter(job.outcome.upper() for job in busy_plan.jobs)
    assert summary.by_state == dict(sorted(planned.items()))
    assert (
        summary.submitted == summary.started == summary.planned == summary.as_planned == len(busy_plan.jobs)
    )
    assert summary.mean_queue_wait_s == 0.0  # the fake starts every job at once
    assert summary.lab_elapsed_s == pytest.approx(clock.t, abs=2)
    real = summary.as_dict()
    assert real["elapsed_real_s"] == pytest.approx(summary.lab_elapsed_s * SCALE)
    assert real["mean_queue_wait_real_s"] == 0.0
    text = summary.text()
    assert f"submitted  {len(busy_plan.jobs)} of {len(busy_plan.jobs)} planned" in text
    assert "(time scale 600)" in text and "trace reference: queue wait mean 446 s" in text
    for state, count in planned.items():
        assert f"  {state.lower():<10} {count}" in text


@pytest.mark.race
def test_the_job_classes_file_is_always_whole_and_readable_by_the_dcgm_shim(
    busy_plan: Plan, tmp_path: Path
) -> None:
    path = tmp_path / "job-classes.json"
    seen: list[dict[str, str]] = []
    clock = FakeClock()
    fake = FakeSlurmrestd(clock, busy_plan.jobs, SCALE)

    def transport(*args: object, **kwargs: object) -> tuple[int, dict[str, object]]:
        if path.exists():
            seen.append(load_job_classes(path))  # the shim's own loader, between any two requests
        return fake(*args, **kwargs)  # type: ignore[arg-type]

    client = RestClient("http://lab", lambda user: Credentials(user, "t"), transport, pause=lambda _s: None)
    run(busy_plan.jobs, client, time_scale=SCALE, shape=SHAPE, seed=1, clock=clock, job_classes=path)
    assert seen and max(len(classes) for classes in seen) > 1
    by_id = {str(job.job_id): job.plan.workload_class for job in fake.jobs.values() if job.plan}
    for classes in seen:
        assert classes.items() <= by_id.items()
    assert [p.name for p in tmp_path.iterdir()] == ["job-classes.json"], "no temporary file is left behind"


def test_when_the_run_ends_the_classes_file_keeps_only_jobs_still_running(
    busy_plan: Plan, tmp_path: Path
) -> None:
    _run(busy_plan, tmp_path)
    assert json.loads((tmp_path / "job-classes.json").read_text()) == {}


def test_a_refused_job_is_reported_and_the_run_goes_on(busy_plan: Plan, tmp_path: Path) -> None:
    fake, clock = _fake(busy_plan)
    fake.failures = [refused("Invalid qos specification", 2066)]
    messages: list[str] = []
    summary = _run_on(busy_plan.jobs, fake, clock, progress=messages.append)
    assert summary.rejected == 1 and summary.submitted == len(busy_plan.jobs) - 1
    assert "Invalid qos specification" in summary.rejections[0] and "Fix:" in summary.rejections[0]
    job = busy_plan.jobs[0]
    # The message names the way, the job, its user and account, and the field Slurm refused.
    refused_as = f"slurmrestd refused plan job 0 ({job.user}/{job.account}, field qos={job.qos!r}):"
    assert any(message.startswith(refused_as) for message in messages), messages


def test_a_run_of_refusals_stops_with_slurms_reason(busy_plan: Plan) -> None:
    fake, clock = _fake(busy_plan)
    fake.failures = [refused("Invalid account or account/partition combination specified", 2045)] * 5
    with pytest.raises(SubmitError, match=r"5 submissions in a row were rejected.*Invalid account.*sacctmgr"):
        _run_on(busy_plan.jobs, fake, clock)


def test_stopping_ends_submissions_and_cancels_planned_cancellations_at_once(tmp_path: Path) -> None:
    """Live mode: an endless plan, stopped from outside."""
    blueprint = busy_blueprint()
    stop = threading.Event()
    clock = FakeClock()
    model = Model(blueprint)
    fake = FakeSlurmrestd(clock, [], SCALE)
    jobs = model.jobs(1)

    def planned_jobs():  # type: ignore[no-untyped-def]
        for job in jobs:
            fake.plan[job.index] = job
            if clock.t > 30:
                stop.set()
            yield job

    summary = _run_on(planned_jobs(), fake, clock, stop=stop, options=RunOptions(drain=False))
    assert 0 < summary.submitted < 10_000
    assert summary.planned == summary.submitted
    still_planned_to_cancel = [
        j for j in fake.jobs.values() if j.plan and j.plan.outcome == "cancelled" and j.state != "CANCELLED"
    ]
    assert still_planned_to_cancel == []


def test_a_failed_poll_is_said_and_tried_again(busy_plan: Plan) -> None:
    fake, clock = _fake(busy_plan)
    fake.unavailable_polls = 5  # one poll's five attempts
    messages: list[str] = []
    summary = _run_on(busy_plan.jobs, fake, clock, progress=messages.append)
    assert any("polling job states failed (1 in a row)" in message for message in messages)
    assert summary.as_planned == len(busy_plan.jobs)


def test_slurmrestd_failing_for_good_stops_the_run(busy_plan: Plan) -> None:
    fake, clock = _fake(busy_plan)
    fake.unavailable_polls = 10**6
    with pytest.raises(SubmitError, match="10 slurmrestd calls in a row failed"):
        _run_on(busy_plan.jobs, fake, clock)
