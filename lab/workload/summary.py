"""The end-of-run summary, read back from Slurm's accounting (slurmdbd via slurmrestd), not from the plan.

One slurmdbd record (``GET /slurmdb/v0.0.42/jobs/``), trimmed::

    {"job_id": 8, "state": {"current": ["FAILED"], "reason": "None"},
     "time": {"submission": 1796034303, "start": 1796034303, "end": 1796034306, "elapsed": 3, …}, …}

Times are whole seconds in the lab; every figure is also given × ``time_scale``, its real-time
equivalent.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lab.workload.plan import PlannedJob

EXPECTED_STATE = {
    "completed": "COMPLETED",
    "failed": "FAILED",
    "cancelled": "CANCELLED",
    "timeout": "TIMEOUT",
}
ACTIVE_STATES = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}
# slurmdbd's "never" for a time: NO_VAL (0xfffffffe) or INFINITE (0xffffffff); a job cancelled while
# pending has ``"start": 4294967294``.
_NEVER = 0xFFFFFFFE


@dataclass
class RunSummary:
    time_scale: float
    lab_elapsed_s: float
    planned: int
    submitted: int
    rejected: int
    started: int
    by_state: dict[str, int]  # final Slurm state → jobs
    unaccounted: int  # submitted jobs slurmdbd had no record of when the run ended
    mean_queue_wait_s: float | None  # lab seconds, start - submission, started jobs
    median_queue_wait_s: float | None
    mean_run_s: float | None  # lab seconds, end - start, started jobs
    as_planned: int  # ended jobs whose final Slurm state is their planned outcome
    active: int = 0  # still pending or running when the summary was read
    trace_queue_median_s: float | None = None  # the trace's reference, real seconds
    trace_queue_mean_s: float | None = None
    rejections: list[str] = field(default_factory=list)
    job_ids: dict[int, int] = field(default_factory=dict)  # plan index → Slurm job id

    def count(self, state: str) -> int:
        return self.by_state.get(state, 0)

    def as_dict(self) -> dict[str, Any]:
        """Every field, plus ``*_real_s``: lab seconds × time scale, the real-time equivalents."""
        data = dict(self.__dict__)
        data["job_ids"] = {str(index): job_id for index, job_id in self.job_ids.items()}
        for key in ("lab_elapsed_s", "mean_queue_wait_s", "median_queue_wait_s", "mean_run_s"):
            value = data[key]
            real_key = key.removeprefix("lab_").removesuffix("_s") + "_real_s"
            data[real_key] = None if value is None else value * self.time_scale
        return data

    def text(self) -> str:
        scale = self.time_scale
        lines = [
            f"workload summary: {duration(self.lab_elapsed_s)} in the lab = "
            f"{duration(self.lab_elapsed_s * scale)} real (time scale {scale:g})",
            f"  submitted  {self.submitted} of {self.planned} planned"
            + (f", {self.rejected} rejected by slurmrestd" if self.rejected else ""),
            f"  started    {self.started}",
        ]
        lines += [f"  {state.lower():<10} {self.count(state)}" for state in EXPECTED_STATE.values()]
        known = {*EXPECTED_STATE.values(), *ACTIVE_STATES}
        others = {k: v for k, v in self.by_state.items() if k not in known}
        if others:
            lines.append("  other      " + ", ".join(f"{k.lower()} {v}" for k, v in sorted(others.items())))
        if self.active:
            lines.append(f"  still pending or running: {self.active}")
        if self.unaccounted:
            lines.append(f"  not yet in accounting: {self.unaccounted}")
        ended = self.submitted - self.unaccounted - self.active
        lines.append(f"  as planned {self.as_planned} of {ended} ended")
        if self.mean_queue_wait_s is not None and self.median_queue_wait_s is not None:
            lines.append(
                f"  queue wait mean {self.mean_queue_wait_s:.1f} s, median {self.median_queue_wait_s:.1f} s "
                f"in the lab = {self.mean_queue_wait_s * scale:.0f} s / "
                f"{self.median_queue_wait_s * scale:.0f} s real"
            )
        if self.trace_queue_mean_s is not None and self.trace_queue_median_s is not None:
            lines.append(
                f"  trace reference: queue wait mean {self.trace_queue_mean_s:.0f} s, "
                f"median {self.trace_queue_median_s:.0f} s real"
            )
        if self.mean_run_s is not None:
            lines.append(
                f"  mean run {self.mean_run_s:.1f} s in the lab = {self.mean_run_s * scale:.0f} s real"
            )
        lines += [f"  rejected: {reason}" for reason in self.rejections[:5]]
        return "\n".join(lines)


def summarise(
    submitted: Mapping[int, PlannedJob],
    records: Mapping[int, Mapping[str, Any]],
    *,
    time_scale: float,
    lab_elapsed_s: float,
    planned: int,
    rejections: list[str],
    trace_queue: tuple[float, float] | None = None,
) -> RunSummary:
    """Count final states and queue waits of ``submitted`` (job id → planned job) from ``records``."""
    by_state: dict[str, int] = {}
    waits: list[float] = []
    runs: list[float] = []
    started = as_planned = active = 0
    for job_id, job in submitted.items():
        record = records.get(job_id)
        if record is None:
            continue
        state = base_state((record.get("state") or {}).get("current"))
        by_state[state] = by_state.get(state, 0) + 1
        times = record.get("time") or {}
        start, submission, end = (_when(times.get(key)) for key in ("start", "submission", "end"))
        active += state in ACTIVE_STATES
        if start:
            started += 1
            if submission:
                waits.append(max(0.0, start - submission))
            if end and end >= start:
                runs.append(end - start)
        as_planned += state == EXPECTED_STATE[job.outcome]
    return RunSummary(
        time_scale=time_scale,
        lab_elapsed_s=lab_elapsed_s,
        planned=planned,
        submitted=len(submitted),
        rejected=len(rejections),
        started=started,
        by_state=dict(sorted(by_state.items())),
        unaccounted=sum(1 for job_id in submitted if job_id not in records),
        mean_queue_wait_s=statistics.fmean(waits) if waits else None,
        median_queue_wait_s=statistics.median(waits) if waits else None,
        mean_run_s=statistics.fmean(runs) if runs else None,
        as_planned=as_planned,
        active=active,
        trace_queue_median_s=trace_queue[0] if trace_queue else None,
        trace_queue_mean_s=trace_queue[1] if trace_queue else None,
        rejections=list(rejections),
        job_ids={job.index: job_id for job_id, job in submitted.items()},
    )


def base_state(state: Any) -> str:
    """``["CANCELLED"]``, ``"RUNNING"`` or ``["PENDING", "REQUEUED"]`` → the base state name."""
    if isinstance(state, list):
        return str(state[0]) if state else "UNKNOWN"
    return str(state or "UNKNOWN")


def number(value: Any) -> float | None:
    """A v0.0.42 number: plain, or ``{"set": true, "infinite": false, "number": N}``."""
    if isinstance(value, dict):
        return float(value["number"]) if value.get("set") and not value.get("infinite") else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _when(value: Any) -> float | None:
    """An epoch time of a slurmdbd record, or None for 0 and the NO_VAL/INFINITE sentinels."""
    seconds = number(value)
    return seconds if seconds and seconds < _NEVER else None


def duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"
