"""The plan: deterministic, and its statistics over a long seeded plan are the configured ones.

Tolerances are about four standard deviations of each statistic over seeds (measured over 12 seeds
of the same 28-day, 2,048-GPU plan): rate ±3 %, hourly counts ±12 %, weekend ratio ±0.03, size
mean ±8 %, run-time median ±4 % and mean ±17 % (σ ≈ 1.8 makes the mean noisy), outcome shares
±1.5 points, class shares ±1 point.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterator
from itertools import takewhile

import pytest

from lab.dcgm.workloads import PROFILES
from lab.paths import DEFAULT_BLUEPRINT
from lab.spec.slurm_blueprint import Blueprint, load
from lab.spec.workload_spec import WORKLOAD_CLASSES
from lab.workload.plan import DAY_S, WEEK_S, Model, Plan, PlannedJob, plan

from .workload_testing import unbounded_blueprint

DAYS = 28  # whole weeks, so the weekly shape averages to exactly 1


@pytest.fixture(scope="module")
def unbounded() -> Blueprint:
    return unbounded_blueprint()


@pytest.fixture(scope="module")
def long_plan(unbounded: Blueprint) -> Plan:
    return plan(unbounded, DAYS * 24, seed=3)


@pytest.fixture(scope="module")
def default() -> Blueprint:
    return load(DEFAULT_BLUEPRINT)


def test_the_same_seed_gives_the_same_plan(default: Blueprint) -> None:
    assert plan(default, 72, seed=11) == plan(default, 72, seed=11)
    assert plan(default, 72, seed=11).jobs != plan(default, 72, seed=12).jobs


def test_a_longer_plan_starts_with_the_shorter_one(default: Blueprint) -> None:
    short, long = plan(default, 48, seed=5), plan(default, 96, seed=5)
    assert long.jobs[: len(short.jobs)] == short.jobs
    assert len(long.jobs) > len(short.jobs)


def test_the_seed_defaults_to_the_blueprints(default: Blueprint) -> None:
    assert default.workload is not None
    assert plan(default, 24).seed == default.workload.seed


def test_changing_class_shares_does_not_move_arrivals(default: Blueprint) -> None:
    """Each aspect has its own random stream: editing one distribution leaves the others' draws."""
    assert default.workload is not None
    classes = [
        c.model_copy(update={"share": s})
        for c, s in zip(default.workload.classes, [0.2, 0.5, 0.3], strict=True)
    ]
    other = default.workload.model_copy(update={"classes": classes})
    a, b = plan(default, 72, seed=2), plan(default, 72, seed=2, spec=other)
    assert [j.submit_s for j in a.jobs] == [j.submit_s for j in b.jobs]
    assert [j.workload_class for j in a.jobs] != [j.workload_class for j in b.jobs]


def test_arrival_rate_is_the_configured_rate_per_gpu(long_plan: Plan, unbounded: Blueprint) -> None:
    assert unbounded.workload is not None
    configured = unbounded.workload.arrivals.gpu_jobs_per_gpu_per_day
    realised = len(long_plan.jobs) / long_plan.total_gpus / DAYS
    assert realised == pytest.approx(configured, rel=0.03)
    assert long_plan.jobs == tuple(sorted(long_plan.jobs, key=lambda j: j.submit_s))


def test_arrivals_follow_the_hour_of_the_day(long_plan: Plan, unbounded: Blueprint) -> None:
    model = Model(unbounded)
    counts = Counter(int(job.submit_s % DAY_S // 3600) for job in long_plan.jobs)
    for hour in range(24):
        minutes = (
            day * DAY_S + hour * 3600 + minute * 60 + 30 for day in range(DAYS) for minute in range(60)
        )
        expected = sum(model.shape(t) for t in minutes) * model.mean_rate_per_s * 60
        assert counts[hour] == pytest.approx(expected, rel=0.12), f"hour {hour}"
    assert unbounded.workload is not None
    assert max(counts, key=lambda h: counts[h]) in {14, 15, 16}  # peak_hour 15
    quietest = min(counts, key=lambda h: counts[h])
    assert quietest in {2, 3, 4}  # twelve hours from the peak


def test_weekends_see_the_configured_fraction_of_weekday_arrivals(long_plan: Plan) -> None:
    weekend = sum(1 for job in long_plan.jobs if job.submit_s % WEEK_S >= 5 * DAY_S)
    ratio = (weekend / (2 * DAYS / 7)) / ((len(long_plan.jobs) - weekend) / (5 * DAYS / 7))
    assert ratio == pytest.approx(0.5, abs=0.03)


def test_sizes_have_the_trace_median_and_mean(long_plan: Plan) -> None:
    gpus = [job.gpus for job in long_plan.jobs]
    assert statistics.median(gpus) == 1
    assert statistics.fmean(gpus) == pytest.approx(5.68, rel=0.08)
    assert max(gpus) <= 1024
    assert all(g & (g - 1) == 0 for g in gpus), "sizes are powers of two"


def test_multi_node_jobs_take_whole_nodes(long_plan: Plan) -> None:
    multi = [job for job in long_plan.jobs if job.nodes > 1]
    assert multi, "a 28-day plan has multi-node jobs"
    assert all(job.gpus == job.nodes * 8 for job in multi)
    assert all(job.nodes == 1 for job in long_plan.jobs if job.gpus <= 8)


def test_run_times_have_the_trace_median_and_mean(long_plan: Plan) -> None:
    runs = [job.duration_s for job in long_plan.jobs]
    assert statistics.median(runs) == pytest.approx(122, rel=0.04)
    assert statistics.fmean(runs) == pytest.approx(1414, rel=0.17)


def test_outcomes_have_the_trace_shares(long_plan: Plan) -> None:
    count = Counter(job.outcome for job in long_plan.jobs)
    total = len(long_plan.jobs)
    shares = {"completed": 0.497, "cancelled": 0.075, "failed": 0.429}
    norm = sum(shares.values())
    assert count["completed"] / total == pytest.approx(shares["completed"] / norm, abs=0.015)
    assert count["cancelled"] / total == pytest.approx(shares["cancelled"] / norm, abs=0.015)
    failed = count["failed"] + count["timeout"]  # the traces count timeouts as failed
    assert failed / total == pytest.approx(shares["failed"] / norm, abs=0.015)
    assert count["timeout"] / failed == pytest.approx(0.02, abs=0.005)


def test_cancelled_jobs_run_long_and_failed_ones_short(long_plan: Plan) -> None:
    """Seren: cancelled jobs are 7.5 % of jobs and 66.4 % of GPU time; failed 42.9 % and 12.4 %."""
    median = {
        outcome: statistics.median(j.duration_s for j in long_plan.jobs if j.outcome == outcome)
        for outcome in ("completed", "cancelled", "failed")
    }
    assert median["cancelled"] > 10 * median["completed"] > 10 * median["failed"]


def test_class_shares_are_the_configured_ones(long_plan: Plan) -> None:
    count = Counter(job.workload_class for job in long_plan.jobs)
    for name, share in {"training": 0.6, "inference": 0.3, "interactive": 0.1}.items():
        assert count[name] / len(long_plan.jobs) == pytest.approx(share, abs=0.01)


def test_workload_classes_are_the_dcgm_shims_profiles() -> None:
    assert set(WORKLOAD_CLASSES) == set(PROFILES)


def test_users_submit_to_their_own_account_and_their_class_accounts(default: Blueprint) -> None:
    accounts = {user.name: user.account for user in default.all_users}
    allowed = {"training": {"llm-pretrain", "vision"}, "inference": {"inference"}}
    jobs = plan(default, 24 * 14, seed=4).jobs
    for job in jobs:
        assert accounts[job.user] == job.account
        assert job.account in allowed.get(job.workload_class, set(accounts.values()))
    assert {job.user for job in jobs} == set(accounts)


def test_the_lab_caps_sizes_and_run_times(default: Blueprint) -> None:
    """On the default lab (32 GPUs, 8 of them on the node the blueprint holds drained): no job exceeds
    its partition's GPUs in service; run times stay inside their limit, and a job that would need longer
    runs into it and times out."""
    jobs = plan(default, 24 * 28, seed=6).jobs
    limit = {("gpu", "normal"): 2 * DAY_S, ("gpu", "high"): DAY_S, ("debug", "normal"): 1800}
    assert max(job.gpus for job in jobs if job.partition == "gpu") == 24
    for job in jobs:
        assert job.gpus <= (8 if job.partition == "debug" else 24)
        assert job.time_limit_s % 60 == 0
        if job.outcome == "timeout":
            assert job.duration_s == job.time_limit_s <= limit[(job.partition, job.qos)]
        else:
            assert job.time_limit_s == limit[(job.partition, job.qos)]
            assert job.duration_s <= job.time_limit_s - 60
    assert {job.partition for job in jobs if job.workload_class == "interactive"} == {"debug"}
    assert any(job.outcome == "timeout" and job.duration_s == 1800 for job in jobs), (
        "debug sessions hit 30 min"
    )


def test_failed_jobs_name_their_failure(default: Blueprint) -> None:
    jobs = plan(default, 24 * 7, seed=1).jobs
    assert all((job.failure is not None) == (job.outcome == "failed") for job in jobs)
    assert len({job.failure for job in jobs if job.failure}) > 1


def test_a_plan_can_start_later_in_the_week(unbounded: Blueprint) -> None:
    """Live mode starts the plan at the wall clock's time of week: from Saturday 00:00 the first two
    days are the weekend's, at half the weekday rate."""
    model = Model(unbounded)
    from_monday = _first(model.jobs(1), 2 * DAY_S)
    from_saturday = _first(model.jobs(1, week_offset_s=5 * DAY_S), 2 * DAY_S)
    assert from_saturday[0].submit_s < 600, "submit_s still counts from the plan's start"
    assert len(from_saturday) / len(from_monday) == pytest.approx(0.5, abs=0.05)


def _first(jobs: Iterator[PlannedJob], seconds: float) -> list[PlannedJob]:
    return list(takewhile(lambda job: job.submit_s < seconds, jobs))
