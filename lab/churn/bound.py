"""The ``hpc_job`` bound: distinct values at every instant ≤ GPU jobs running at that instant.

Prometheus sees a mapping file only when it scrapes, so the comparison allows for the scrape's lag.
The values at an evaluation time ``t`` are those of each target's newest scrape at or before ``t``
(:func:`lab.churn.queries.queries` drops copies whose sample is older than one interval, which after a
Prometheus restart would linger for the lookback); that scrape read the files at
``s ∈ (t − interval, t]`` (plus the few milliseconds the read takes). A job's id is
in the files from its prolog (at or after Start, PrologFlags=Alloc) until its epilog (after End).
Slurm's times are whole seconds, truncated, so the job ran in ``[Start, End + 1 s)``. Hence:

    job j may carry labels at t  ⇔  Start_j − read ≤ t < End_j + 1 s + lag
    lag  = scrape interval + grace   (grace: the epilog runs after End; default 5 s, the longest
                                      the mapping script waits for its lock)
    read = 1 s                       (a scrape's timestamp is its start; the files are read just after)

The bound holds at ``t`` when the distinct values are at most the jobs that may carry labels at
``t``, and (the identity check, which implies the count) every value is one of those jobs' ids.
A requeued job's runs count once: the runs of one id are merged before counting.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from lab.churn.jobs import SlurmJob

EPILOG_GRACE_S = 5.0  # prolog/dcgm-job-mapping: MAX_LOCK_WAIT_S
READ_S = 1.0


@dataclass(frozen=True)
class Tolerance:
    scrape_interval_s: float
    grace_s: float = EPILOG_GRACE_S
    read_s: float = READ_S

    @property
    def lag_s(self) -> float:
        return self.scrape_interval_s + self.grace_s


@dataclass(frozen=True, slots=True)
class BoundPoint:
    t: float
    distinct: int  # distinct hpc_job values Prometheus shows at t
    running: int  # GPU jobs running at t by Slurm's accounting, no tolerance
    allowed: int  # GPU jobs that may carry labels at t (with the tolerance)
    unknown: tuple[str, ...] = ()  # values that are none of those jobs

    @property
    def over(self) -> bool:
        return self.distinct > self.allowed


@dataclass(frozen=True)
class BoundResult:
    tolerance: Tolerance
    points: tuple[BoundPoint, ...]

    @property
    def over(self) -> list[BoundPoint]:
        return [p for p in self.points if p.over]

    @property
    def unknown(self) -> list[BoundPoint]:
        return [p for p in self.points if p.unknown]

    @property
    def holds(self) -> bool:
        return not self.over and not self.unknown

    @property
    def peak_distinct(self) -> int:
        return max((p.distinct for p in self.points), default=0)

    @property
    def peak_running(self) -> int:
        return max((p.running for p in self.points), default=0)

    @property
    def peak_allowed(self) -> int:
        return max((p.allowed for p in self.points), default=0)

    @property
    def above_running(self) -> int:
        """Evaluations with more values than strictly running jobs: the lag the tolerance absorbs."""
        return sum(1 for p in self.points if p.distinct > p.running)


class _Intervals:
    """Per job id, the merged intervals [a, b) in which it counts; counting by bisection."""

    def __init__(self, jobs: Iterable[SlurmJob], before_s: float, after_s: float) -> None:
        runs: dict[str, list[tuple[float, float]]] = {}
        for job in jobs:
            runs.setdefault(job.job_id, []).append((job.start - before_s, job.end_exclusive + after_s))
        self.by_id: dict[str, list[tuple[float, float]]] = {}
        for job_id, spans in runs.items():
            merged: list[tuple[float, float]] = []
            for a, b in sorted(spans):
                if merged and a <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], b))
                else:
                    merged.append((a, b))
            self.by_id[job_id] = merged
        spans_all = [span for merged in self.by_id.values() for span in merged]
        self._starts = sorted(a for a, _ in spans_all)
        self._ends = sorted(b for _, b in spans_all)

    def count(self, t: float) -> int:
        """Intervals with a ≤ t < b (an interval that ended at or before t has begun before it)."""
        return bisect_right(self._starts, t) - bisect_right(self._ends, t)

    def contains(self, job_id: str, t: float) -> bool:
        return any(a <= t < b for a, b in self.by_id.get(job_id, ()))


def check(
    times: Sequence[float],
    observed: Sequence[Collection[str]],
    jobs: Iterable[SlurmJob],
    tolerance: Tolerance,
) -> BoundResult:
    """Compare the ``hpc_job`` values seen at each time with the GPU jobs Slurm ran around it."""
    if len(times) != len(observed):
        raise ValueError(f"{len(times)} times but {len(observed)} observations")
    gpu_jobs = [job for job in jobs if job.gpus > 0]
    strict = _Intervals(gpu_jobs, 0.0, 0.0)
    tolerant = _Intervals(gpu_jobs, tolerance.read_s, tolerance.lag_s)
    points = []
    for t, values in zip(times, observed, strict=True):
        unknown = tuple(sorted(v for v in values if not tolerant.contains(v, t)))
        points.append(BoundPoint(t, len(values), strict.count(t), tolerant.count(t), unknown))
    return BoundResult(tolerance, tuple(points))
