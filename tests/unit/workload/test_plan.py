"""The plan: deterministic, and its statistics over a long seeded plan are the trace's.

The long plan is the default workload (Helios Venus) on 2,048 GPUs with no limit, for 28 days.
Tolerances are about four standard deviations of each statistic over 12 seeds of that plan: rate
±2 %, hourly counts ±12 %, weekend ratio ±0.03, mean GPUs ±6 %, run-time median ±4 % and mean ±9 %,
GPU-seconds per job ±18 % (the heaviest tail), allocated share ±15 %, outcome shares ±1.5 points by
count and ±8 points by GPU time, class shares ±1 point.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterator
from itertools import takewhile

import pytest

from lab.blueprint.slurm_blueprint import Blueprint, load, parse
from lab.blueprint.workload_spec import WORKLOAD_CLASSES
from lab.dcgm.workloads import PROFILES
from lab.paths import DEFAULT_BLUEPRINT
from lab.workload.plan import DAY_S, WEEK_S, Model, Plan, PlannedJob, plan
from lab.workload.stats import allocated_share, describe

from .workload_testing import shipped_data, unbounded_blueprint

DAYS = 28  # whole weeks, so the weekly shape averages to exactly 1


@pytest.fixture(scope="module")
def unbounded() -> Blueprint:
    return unbounded_blueprint()


@pytest.fixture(scope="module")
def long_plan(unbounded: Blueprint) -> Plan:
    return plan(unbounded, DAYS * 24, seed=3)


@pytest.fixture(scope="module")
def submitted(long_plan: Plan) -> list[PlannedJob]:
    """The jobs submitted within the plan (not those running when it began)."""
    return [job for job in long_plan.jobs if job.warm_s == 0]


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


def test_arrival_rate_is_the_traces_rate_per_gpu(submitted: list[PlannedJob], long_plan: Plan) -> None:
    """Helios Venus: 125,303 GPU jobs in 181 days on 1,022 GPUs = 0.677 per GPU per day."""
    realised = len(submitted) / long_plan.gpus_in_service / DAYS
    assert realised == pytest.approx(125_303 / 181 / 1_022, rel=0.02)
    assert list(long_plan.jobs) == sorted(long_plan.jobs, key=lambda j: j.submit_s)


def test_arrivals_follow_the_hour_of_the_day(submitted: list[PlannedJob], unbounded: Blueprint) -> None:
    model = Model(unbounded)
    counts = Counter(int(job.submit_s % DAY_S // 3600) for job in submitted)
    for hour in range(24):
        minutes = (
            day * DAY_S + hour * 3600 + minute * 60 + 30 for day in range(DAYS) for minute in range(60)
        )
        expected = sum(model.shape(t) for t in minutes) * model.mean_rate_per_s * 60
        assert counts[hour] == pytest.approx(expected, rel=0.12), f"hour {hour}"
    assert max(counts, key=lambda h: counts[h]) in {14, 15, 16}  # peak_hour 15
    quietest = min(counts, key=lambda h: counts[h])
    assert quietest in {2, 3, 4}  # twelve hours from the peak


def test_weekends_see_the_configured_fraction_of_weekday_arrivals(submitted: list[PlannedJob]) -> None:
    weekend = sum(1 for job in submitted if job.submit_s % WEEK_S >= 5 * DAY_S)
    ratio = (weekend / (2 * DAYS / 7)) / ((len(submitted) - weekend) / (5 * DAYS / 7))
    assert ratio == pytest.approx(0.5, abs=0.03)


def test_sizes_have_the_trace_median_and_mean(submitted: list[PlannedJob]) -> None:
    """Venus: median 1 GPU, mean 6.736 (the table read at bucket tops gives 6.83)."""
    gpus = [job.gpus for job in submitted]
    assert statistics.median(gpus) == 1
    assert statistics.fmean(gpus) == pytest.approx(6.736, rel=0.06)
    assert set(gpus) <= {1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 128}


def test_multi_node_jobs_take_whole_nodes(submitted: list[PlannedJob]) -> None:
    multi = [job for job in submitted if job.nodes > 1]
    assert multi, "a 28-day plan has multi-node jobs"
    assert all(job.gpus == job.nodes * 8 for job in multi)
    assert all(job.nodes == 1 for job in submitted if job.gpus <= 8)


def test_run_times_have_the_trace_median_and_mean(submitted: list[PlannedJob]) -> None:
    """Venus: median 204 s (the CDF figure puts it at 199 s), mean 13,041 s."""
    runs = [job.duration_s for job in submitted]
    assert statistics.median(runs) == pytest.approx(199, rel=0.04)
    assert statistics.fmean(runs) == pytest.approx(13_041, rel=0.09)


def test_gpu_time_per_job_and_allocated_share_are_the_traces(
    submitted: list[PlannedJob], long_plan: Plan
) -> None:
    """Venus: 98,526 GPU-seconds per GPU job, 77.2 % of its GPUs allocated. Drawing size and run time
    apart would give 6.8 GPUs × 13,041 s = 88,700 and 69 %."""
    per_job = statistics.fmean(job.gpu_seconds for job in submitted)
    assert per_job == pytest.approx(98_526, rel=0.18)
    assert allocated_share(long_plan) == pytest.approx(0.772, rel=0.15)


def test_big_jobs_run_long(submitted: list[PlannedJob]) -> None:
    def mean_run(sizes: set[int]) -> float:
        return statistics.fmean(job.duration_s for job in submitted if job.gpus in sizes)

    assert mean_run({16, 24, 32}) > 1.5 * mean_run({1})


def test_outcomes_have_the_trace_shares(submitted: list[PlannedJob]) -> None:
    count = Counter(job.outcome for job in submitted)
    total = len(submitted)
    gpu_time = Counter[str]()
    for job in submitted:
        gpu_time["failed" if job.outcome == "timeout" else job.outcome] += job.gpu_seconds
    all_time = sum(gpu_time.values())
    by_count = {"completed": 0.526, "cancelled": 0.272, "failed": 0.202}
    by_time = {"completed": 0.5162, "cancelled": 0.3985, "failed": 0.0852}
    failed = count["failed"] + count["timeout"]  # the traces count timeouts as failed
    for name, realised in (
        ("completed", count["completed"]),
        ("cancelled", count["cancelled"]),
        ("failed", failed),
    ):
        assert realised / total == pytest.approx(by_count[name], abs=0.015), name
        assert gpu_time[name] / all_time == pytest.approx(by_time[name], abs=0.08), name
    assert count["timeout"] / failed == pytest.approx(0.02, abs=0.006)


def test_class_shares_are_the_configured_ones_where_every_partition_fits(submitted: list[PlannedJob]) -> None:
    count = Counter(job.workload_class for job in submitted)
    for name, share in {"training": 0.6, "inference": 0.3, "interactive": 0.1}.items():
        assert count[name] / len(submitted) == pytest.approx(share, abs=0.01)


def test_a_plan_begins_with_the_jobs_a_cluster_would_have_running(
    long_plan: Plan, unbounded: Blueprint
) -> None:
    """Little's law with the arrival shape: the jobs submitted before Monday 00:00 that still run.
    It is lower than rate × mean run because the weekend before ran at half rate."""
    model = Model(unbounded)
    warm = [job for job in long_plan.jobs if job.warm_s > 0]
    assert [job.index for job in warm] == list(range(len(warm)))
    assert all(job.submit_s == 0 for job in warm)
    step = 60.0
    expected = sum(
        model.mean_rate_per_s * model.shape(-ago) * (1 - model.joint.run_cdf(ago)) * step
        for ago in (step * (n + 0.5) for n in range(int(model.joint.longest_run_s / step)))
    )
    assert len(warm) == pytest.approx(expected, rel=0.2)
    for job in warm:
        assert 0 < job.duration_s <= job.trace_run_s - job.warm_s + 1


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


def test_the_lab_caps_sizes_but_keeps_their_gpu_time(default: Blueprint) -> None:
    """On the default lab (32 GPUs, 8 on the node held drained): a job larger than the 24 GPUs in
    service runs on 24 for proportionally longer; debug jobs fit their 8 GPUs and 30 minutes; QOS high
    jobs fit its day."""
    jobs = [job for job in plan(default, 24 * 28, seed=6).jobs if job.warm_s == 0]
    limit = {("gpu", "normal"): 14 * DAY_S, ("gpu", "high"): DAY_S, ("debug", "normal"): 1800}
    capped = [job for job in jobs if job.trace_gpus > job.gpus]
    assert capped, "four weeks hold jobs above 24 GPUs"
    for job in jobs:
        assert job.gpus <= (8 if job.partition == "debug" else 24)
        assert job.time_limit_s == limit[(job.partition, job.qos)] or job.outcome == "timeout"
        if job.outcome != "timeout":
            kept = pytest.approx(job.trace_gpus * job.trace_run_s, rel=1e-3, abs=job.gpus)  # runs are ≥ 1 s
            assert job.gpu_seconds == kept
            assert job.duration_s <= job.time_limit_s - 60
    assert {job.partition for job in jobs if job.workload_class == "interactive"} == {"debug"}
    stats = describe(plan(default, 24 * 28, seed=6), Model(default))
    assert stats["cap"]["capped_job_share"] == pytest.approx(len(capped) / len(jobs), abs=1e-4)
    assert stats["cap"]["gpu_time_lost_to_limits"] < 0.001  # planned timeouts lose under a minute


def test_a_wall_time_cap_loses_gpu_time_and_says_so() -> None:
    """With the 48 h batch cap of HPC sites, the multi-day jobs time out at it."""
    data = shipped_data()
    data["partitions"][0]["max_time"] = "2-00:00:00"
    capped = parse(data)
    planned = plan(capped, 24 * 56, seed=6)
    stats = describe(planned, Model(capped))
    assert stats["cap"]["gpu_time_lost_to_limits"] > 0.1
    assert any(job.outcome == "timeout" and job.duration_s == 2 * DAY_S for job in planned.jobs)


def test_failed_jobs_name_their_failure(default: Blueprint) -> None:
    jobs = plan(default, 24 * 7, seed=1).jobs
    assert all((job.failure is not None) == (job.outcome == "failed") for job in jobs)
    assert len({job.failure for job in jobs if job.failure}) > 1


def test_a_plan_can_start_later_in_the_week(unbounded: Blueprint) -> None:
    """Live mode starts the plan at the wall clock's time of week: from Saturday 00:00 the first two
    days are the weekend's, at half the weekday rate."""
    model = Model(unbounded)
    from_monday = [job for job in _first(model.jobs(1), 2 * DAY_S) if job.warm_s == 0]
    from_saturday = [
        job for job in _first(model.jobs(1, week_offset_s=5 * DAY_S), 2 * DAY_S) if job.warm_s == 0
    ]
    assert from_saturday[0].submit_s < 600, "submit_s still counts from the plan's start"
    assert len(from_saturday) / len(from_monday) == pytest.approx(0.5, abs=0.05)


def _first(jobs: Iterator[PlannedJob], seconds: float) -> list[PlannedJob]:
    return list(takewhile(lambda job: job.submit_s < seconds, jobs))
