"""A plan's realised statistics next to the trace figures they were drawn from.

Realised figures differ from the trace's where the lab's limits bind: a job larger than every
partition runs on fewer GPUs for longer (its GPU time kept), whole nodes round sizes up, and a job
longer than its limit times out (its GPU time lost). The ``cap`` section says how much of each; both
columns are shown so the difference is visible, never hidden. Jobs running when the plan began
(``warm_s`` > 0) count towards the allocated share only: their runs are cut by the plan's start.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from lab.workload.plan import DAY_S, WEEK_S, Model, Plan, PlannedJob

OUTCOME_GROUPS = ("completed", "cancelled", "failed")  # the traces count timeouts with failed


def describe(plan: Plan, model: Model) -> dict[str, Any]:
    """Realised vs trace: arrivals (rate, daily and weekly shape), sizes, run times, GPU time, outcomes."""
    spec, trace = model.spec, model.trace
    submitted = [job for job in plan.jobs if job.warm_s == 0]
    days = plan.hours / 24
    count = len(submitted)
    hourly = _hourly_profile(plan, model)
    result: dict[str, Any] = {
        "trace": trace.cluster,
        "jobs": count,
        "running_at_start": len(plan.jobs) - count,
        "real_hours": plan.hours,
        "lab_hours": plan.hours / plan.time_scale,
        "time_scale": plan.time_scale,
        "gpus": plan.total_gpus,
        "gpus_in_service": plan.gpus_in_service,
        "arrivals": {
            "gpu_jobs_per_gpu_per_day": _pair(
                count / plan.gpus_in_service / days, trace.gpu_jobs_per_gpu_per_day
            ),
            "jobs_per_day": _pair(count / days, model.mean_rate_per_s * DAY_S),
            "busiest_to_quietest_hour": _pair(_ratio(hourly["realised"]), _ratio(hourly["expected"]) or 0.0),
            "weekend_to_weekday": _pair(_weekend_ratio(plan, model), spec.arrivals.weekend_factor),
            "hourly": hourly,
        },
        "allocated_share": _pair(allocated_share(plan), trace.allocated_share),
    }
    if not submitted:
        return result
    gpus = [job.gpus for job in submitted]
    run = [job.duration_s for job in submitted]
    result["sizes"] = {
        "median_gpus": _pair(statistics.median(gpus), trace.gpus_per_job.median),
        "mean_gpus": _pair(statistics.fmean(gpus), trace.gpus_per_job.mean),
        "max_gpus": _pair(max(gpus), max(row.gpus for row in trace.sizes)),
        "multi_node_share": round(sum(1 for job in submitted if job.nodes > 1) / count, 4),
    }
    result["durations"] = {
        "median_s": _pair(statistics.median(run), trace.run_s.median),
        "mean_s": _pair(statistics.fmean(run), trace.run_s.mean),
    }
    result["gpu_seconds_per_job"] = _pair(
        statistics.fmean(job.gpu_seconds for job in submitted), trace.gpu_seconds_per_job
    )
    result["cap"] = _cap_effect(submitted)
    result["outcomes"] = _outcomes(submitted, model)
    classes = Counter(job.workload_class for job in submitted)
    result["classes"] = {c.name: _pair(classes[c.name] / count, c.share) for c in spec.classes}
    result["queue_reference"] = {
        "median_s": trace.queue_s.median,
        "mean_s": trace.queue_s.mean,
        "note": "not planned: the lab's Slurm decides queue waits; the run summary compares them",
    }
    return result


def allocated_share(plan: Plan) -> float:
    """GPU-seconds the plan's jobs hold within it ÷ (GPUs in service × its span), if none waited.

    Slurm's queue can only lower it; jobs that outlive the plan count up to its end.
    """
    span = plan.hours * 3600
    held = sum(
        job.gpus * max(0.0, min(span, job.submit_s + job.duration_s) - job.submit_s) for job in plan.jobs
    )
    return held / (plan.gpus_in_service * span) if plan.gpus_in_service else 0.0


def _cap_effect(jobs: list[PlannedJob]) -> dict[str, float]:
    """What the lab's size and time limits did to the trace's draws."""
    drawn = sum(job.trace_gpus * job.trace_run_s for job in jobs) or 1.0
    capped = [job for job in jobs if job.trace_gpus > job.gpus]
    return {
        "capped_job_share": round(len(capped) / len(jobs), 4),
        "capped_gpu_time_share": round(sum(job.trace_gpus * job.trace_run_s for job in capped) / drawn, 4),
        "gpu_time_lost_to_limits": round(
            sum(max(0.0, job.trace_gpus * job.trace_run_s - job.gpu_seconds) for job in jobs) / drawn, 4
        ),
    }


def _outcomes(jobs: list[PlannedJob], model: Model) -> dict[str, Any]:
    trace_outcomes = model.trace.outcomes
    count = len(jobs)
    outcomes = Counter[str]("failed" if job.outcome == "timeout" else job.outcome for job in jobs)
    gpu_time: dict[str, float] = dict.fromkeys(OUTCOME_GROUPS, 0.0)
    for job in jobs:
        gpu_time["failed" if job.outcome == "timeout" else job.outcome] += job.gpu_seconds
    total_gpu_time = sum(gpu_time.values()) or 1.0
    return {
        "by_count": {
            name: _pair(outcomes[name] / count, getattr(trace_outcomes.by_count, name))
            for name in OUTCOME_GROUPS
        },
        "by_gpu_time": {
            name: _pair(gpu_time[name] / total_gpu_time, getattr(trace_outcomes.by_gpu_time, name))
            for name in OUTCOME_GROUPS
        },
        "gpu_time_in_timeouts": round(
            sum(job.gpu_seconds for job in jobs if job.outcome == "timeout") / total_gpu_time, 4
        ),
        "timeout_share_of_failed": _pair(
            sum(1 for job in jobs if job.outcome == "timeout") / max(1, outcomes["failed"]),
            model.spec.timeout_share_of_failed,
        ),
    }


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
        if job.warm_s == 0:
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
    submitted = [job for job in plan.jobs if job.warm_s == 0]
    on_weekend = sum(1 for job in submitted if job.submit_s % WEEK_S >= 5 * DAY_S)
    weekday_rate = (len(submitted) - on_weekend) / weekdays if weekdays > 0 else 0.0
    if weekend_days <= 0 or weekday_rate <= 0:
        return None
    return (on_weekend / weekend_days) / weekday_rate
