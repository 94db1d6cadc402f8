"""The blueprint's ``workload:`` section: which trace statistics the plan is drawn from.

Every field is a published figure or a stated lab assumption; the shipped blueprints name the trace
and number beside each value. Validation here covers what the section alone can check (fractions sum
to one, a mean is not below its median, a CDF does not fall …);
:func:`lab.workload.plan.check_against` then checks
the names it uses (partitions, accounts, QOS) against the rest of the blueprint.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Literal, get_args

from pydantic import Field, model_validator

from lab.blueprint.strict import Strict

# The classes the DCGM shim can shape GPU activity for (lab/dcgm/workloads.py PROFILES); a unit test
# keeps the two lists equal.
WorkloadClassName = Literal["training", "inference", "interactive"]
WORKLOAD_CLASSES: tuple[str, ...] = get_args(WorkloadClassName)
Outcome = Literal["completed", "failed", "cancelled", "timeout"]


class Arrivals(Strict):
    """The shape of Poisson arrivals over the hour of the day and the day of the week.

    The shape has mean 1 over a week, so the long-run rate stays the trace's GPU jobs per GPU per day.
    """

    diurnal_peak_to_trough: float = Field(ge=1, le=100, description="busiest hour ÷ quietest hour")
    peak_hour: float = Field(ge=0, lt=24, description="hour of day (0-24) with the most submissions")
    weekend_factor: float = Field(gt=0, le=1, description="Saturday/Sunday rate ÷ weekday rate")


class MedianMean(Strict):
    """A published median and mean (the model is fitted to the tables; these are checked against it)."""

    median: float = Field(ge=0)
    mean: float = Field(ge=0)

    @model_validator(mode="after")
    def _mean_not_below_median(self) -> MedianMean:
        if self.mean < self.median:
            raise ValueError(
                f"mean {self.mean:g} is below median {self.median:g}: heavy-tailed job figures never are. "
                "Fix: copy both from the same trace row"
            )
        return self


class SizeRow(Strict):
    """Jobs of this many GPUs: their share of GPU jobs and of GPU time."""

    gpus: int = Field(ge=1, le=65536)
    jobs: float = Field(ge=0, le=1)
    gpu_time: float = Field(ge=0, le=1)


class Shares(Strict):
    """Completed / cancelled / failed as fractions of jobs (or of GPU time); they sum to 1."""

    completed: float = Field(ge=0, le=1)
    cancelled: float = Field(ge=0, le=1)
    failed: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _sum_to_one(self) -> Shares:
        total = self.completed + self.cancelled + self.failed
        if abs(total - 1) > 0.01:
            raise ValueError(
                f"completed + cancelled + failed = {total:.3f}, not 1 (±0.01). "
                "Fix: copy the three fractions from one trace row"
            )
        return self

    def normalised(self) -> dict[str, float]:
        total = self.completed + self.cancelled + self.failed
        return {
            "completed": self.completed / total,
            "cancelled": self.cancelled / total,
            "failed": self.failed / total,
        }


class Outcomes(Strict):
    """How jobs end. ``by_gpu_time`` makes cancelled jobs long and failed ones short, as in the traces."""

    by_count: Shares
    by_gpu_time: Shares

    @model_validator(mode="after")
    def _gpu_time_needs_jobs(self) -> Outcomes:
        count, gpu_time = self.by_count.normalised(), self.by_gpu_time.normalised()
        for name, share in count.items():
            if (share == 0) != (gpu_time[name] == 0):
                raise ValueError(
                    f"{name}: by_count {share} and by_gpu_time {gpu_time[name]} must be both zero or both "
                    "positive. Fix: copy both rows from the same trace"
                )
        return self


class Trace(Strict):
    """One published cluster: its size, span, GPU jobs and their joint shape, all from the same trace.

    Because the arrival rate, the GPU time and the cluster size come from one cluster, the share of
    GPUs the workload keeps allocated is that cluster's (:attr:`allocated_share`).
    """

    cluster: str = Field(min_length=1, description="the trace and cluster, for reports")
    gpus: float = Field(gt=0, description="the cluster's GPUs over the trace (mean daily count)")
    days: float = Field(gt=0, description="the trace's span in days")
    gpu_jobs: int = Field(gt=0)
    gpu_seconds: float = Field(gt=0, description="GPU time of all GPU jobs (GPUs × run seconds)")
    gpus_per_job: MedianMean
    run_s: MedianMean
    queue_s: MedianMean
    sizes: list[SizeRow] = Field(min_length=1, description="shares of jobs and GPU time by GPU count")
    run_cdf: list[float] = Field(
        min_length=2, max_length=40, description="fraction of GPU jobs with run ≤ 2^k s, k = 0, 1, 2 …"
    )
    outcomes: Outcomes

    @property
    def gpu_jobs_per_gpu_per_day(self) -> float:
        return self.gpu_jobs / self.days / self.gpus

    @property
    def gpu_seconds_per_job(self) -> float:
        return self.gpu_seconds / self.gpu_jobs

    @property
    def allocated_share(self) -> float:
        """GPU time ÷ (GPUs × span): the cluster's mean share of GPUs allocated to jobs."""
        return self.gpu_seconds / (self.gpus * self.days * 86_400)

    @model_validator(mode="after")
    def _tables_hold(self) -> Trace:
        gpus = [row.gpus for row in self.sizes]
        if gpus != sorted(set(gpus)):
            raise ValueError(
                f"sizes: GPU counts {gpus} must rise, each once. Fix: one row per size, ascending"
            )
        for row in self.sizes:
            if (row.jobs == 0) != (row.gpu_time == 0):
                raise ValueError(
                    f"sizes: the {row.gpus}-GPU row has jobs {row.jobs} and gpu_time {row.gpu_time}; both "
                    "must be zero or both positive. Fix: drop the row or copy both shares"
                )
        for field in ("jobs", "gpu_time"):
            total = sum(getattr(row, field) for row in self.sizes)
            if abs(total - 1) > 0.01:
                raise ValueError(
                    f"sizes: the {field} shares sum to {total:.4f}, not 1 (±0.01). "
                    "Fix: copy the whole table from one figure"
                )
        cdf = self.run_cdf
        if any(b < a for a, b in pairwise(cdf)) or cdf[0] < 0 or cdf[-1] > 1:
            raise ValueError("run_cdf: must not fall and must lie in [0, 1]. Fix: copy the CDF as fractions")
        if cdf[-1] < 0.999:
            raise ValueError(
                f"run_cdf: ends at {cdf[-1]}, not 1: the longest bin must hold the longest jobs. "
                "Fix: extend the CDF to the 2^k s that reaches 1"
            )
        return self


class WorkloadClassSpec(Strict):
    """One kind of job: where it runs and who submits it."""

    name: WorkloadClassName
    share: float = Field(gt=0, le=1, description="fraction of the jobs that fit its partition")
    partition: str
    accounts: list[str] = Field(default_factory=list, description="submitting accounts; empty = all")
    high_qos_share: float = Field(
        default=0, ge=0, le=1, description="fraction of the jobs within QOS high's wall submitted with it"
    )


class WorkloadSpec(Strict):
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    time_scale: float = Field(
        default=1, ge=1, le=100_000, description="real seconds per lab second (1 = real time)"
    )
    trace: Trace
    arrivals: Arrivals
    timeout_share_of_failed: float = Field(
        ge=0, lt=1, description="failed jobs planned to end at their time limit (lab assumption)"
    )
    classes: list[WorkloadClassSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _classes_add_up(self) -> WorkloadSpec:
        names = [c.name for c in self.classes]
        if len(set(names)) != len(names):
            raise ValueError(f"classes: each class once, found {names}")
        total = sum(c.share for c in self.classes)
        if abs(total - 1) > 0.01:
            raise ValueError(f"classes: shares sum to {total:.3f}, not 1 (±0.01). Fix: rescale them")
        return self
