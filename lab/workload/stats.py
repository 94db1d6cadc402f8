"""A plan's realised statistics next to the trace figures they were drawn from.

Realised figures differ from the trace's where the lab's limits cut the distributions: sizes are
capped by the partition, run times by the partition's and QOS's limits (the traces have multi-day
jobs). Both are shown so the difference is visible, never hidden.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from lab.workload.plan import DAY_S, WEEK_S, Model, Plan

OUTCOME_GROUPS = ("completed", "cancelled", "failed")  # the traces count timeouts with failed


def describe(plan: Plan, model: Model) -> dict[str, Any]:
    """Realised vs configured: arrivals (rate, daily and weekly shape), sizes, run times, outcomes."""
    spec = model.spec
    jobs = plan.jobs
    days = plan.hours / 24
    count = len(jobs)
    hourly = _hourly_profile(plan, model)
    result: dict[str, Any] = {
        "jobs": count,
        "real_hours": plan.hours,
        "lab_hours": plan.hours / plan.time_scale,
        "time_scale": plan.time_scale,
        "gpus": plan.total_gpus,
        "arrivals": {
            "gpu_jobs_per_gpu_per_day": _pair(
                count / plan.total_gpus / days, spec.arrivals.gpu_jobs_per_gpu_per_day
            ),
            "jobs_per_day": _pair(count / days, model.mean_rate_per_s * DAY_S),
            "busiest_to_quietest_hour": _pair(_ratio(hourly["realised"]), _ratio(hourly["expected"]) or 0.0),
            "weekend_to_weekday": _pair(_weekend_ratio(plan, model), spec.arrivals.weekend_factor),
            "hourly": hourly,
        },
    }
    if not jobs:
        return result
    gpus = [job.gpus for job in jobs]
    run = [job.duration_s for job in jobs]
    result["sizes"] = {
        "median_gpus": _pair(statistics.median(gpus), spec.sizes.median_gpus),
        "mean_gpus": _pair(statistics.fmean(gpus), spec.sizes.mean_gpus),
        "max_gpus": _pair(max(gpus), spec.sizes.max_gpus),
        "multi_node_share": round(sum(1 for job in jobs if job.nodes > 1) / count, 4),
    }
    result["durations"] = {
        "median_s": _pair(statistics.median(run), spec.durations.median_s),
        "mean_s": _pair(statistics.fmean(run), spec.durations.mean_s),
    }
    outcomes = Counter[str]("failed" if job.outcome == "timeout" else job.outcome for job in jobs)
    gpu_time: dict[str, float] = dict.fromkeys(OUTCOME_GROUPS, 0.0)
    for job in jobs:
        gpu_time["failed" if job.outcome == "timeout" else job.outcome] += job.gpus * job.duration_s
    total_gpu_time = sum(gpu_time.values()) or 1.0
    result["outcomes"] = {
        "by_count": {
            name: _pair(outcomes[name] / count, getattr(spec.outcomes.by_count, name))
            for name in OUTCOME_GROUPS
        },
        "by_gpu_time": {
            name: _pair(gpu_time[name] / total_gpu_time, getattr(spec.outcomes.by_gpu_time, name))
            for name in OUTCOME_GROUPS
        },
        "gpu_time_in_timeouts": round(
            sum(job.gpus * job.duration_s for job in jobs if job.outcome == "timeout") / total_gpu_time, 4
        ),
        "timeout_share_of_failed": _pair(
            sum(1 for job in jobs if job.outcome == "timeout") / max(1, outcomes["failed"]),
            spec.outcomes.timeout_share_of_failed,
        ),
    }
    classes = Counter(job.workload_class for job in jobs)
    result["classes"] = {c.name: _pair(classes[c.name] / count, c.share) for c in spec.classes}
    result["queue_reference"] = {
        "median_s": spec.queue.median_s,
        "mean_s": spec.queue.mean_s,
        "note": "not planned: the lab's Slurm decides queue waits; the run summary compares them",
    }
    return result


def _pair(realised: float | None, configured: float) -> dict[str, float | None]:
    """``realised`` is None where the plan is too short to measure it (no weekend, an empty hour)."""
    return {
        "realised": None if realised is None else round(float(realised), 4),
        "configured": round(configured, 4),
    }


def _hourly_profile(plan: Plan, model: Model) -> dict[str, list[float]]:
    """Jobs per hour of the day, realised and expected, each normalised to a mean of 1."""
    realised = [0.0] * 24
    for job in plan.jobs:
        realised[int(job.submit_s % DAY_S // 3600)] += 1
    # Expected: the shape integrated over the plan's span (weekends weigh the days they cover).
    expected = [0.0] * 24
    step = 600
    span = int(plan.hours * 3600)
    for t in range(step // 2, span, step):
        expected[int(t % DAY_S // 3600)] += model.shape(t)
    return {"realised": _normalised(realised), "expected": _normalised(expected)}


def _normalised(values: list[float]) -> list[float]:
    mean = statistics.fmean(values) if values else 0.0
    return [round(value / mean, 4) if mean else 0.0 for value in values]


def _ratio(values: list[float]) -> float | None:
    """Busiest ÷ quietest; None when some hour saw no job."""
    return max(values) / min(values) if values and min(values) > 0 else None


def _weekend_ratio(plan: Plan, model: Model) -> float | None:
    """Jobs per weekend day ÷ jobs per weekday, over the days the plan covers."""
    span = plan.hours * 3600
    weekend_days = (
        sum(
            min(span, start + DAY_S) - start
            for week in range(int(span // WEEK_S) + 1)
            for start in (week * WEEK_S + 5 * DAY_S, week * WEEK_S + 6 * DAY_S)
            if start < span
        )
        / DAY_S
    )
    weekdays = span / DAY_S - weekend_days
    on_weekend = sum(1 for job in plan.jobs if job.submit_s % WEEK_S >= 5 * DAY_S)
    weekday_rate = (len(plan.jobs) - on_weekend) / weekdays if weekdays > 0 else 0.0
    if weekend_days <= 0 or weekday_rate <= 0:
        return None
    return (on_weekend / weekend_days) / weekday_rate
