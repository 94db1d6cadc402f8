"""The blueprint's ``workload:`` section: which trace statistics the plan is drawn from.

Every field is a published figure or a stated lab assumption; the shipped blueprints name the trace
and number beside each value. Validation here covers what the section alone can check (fractions sum
to one, a log-normal's mean exceeds its median …); :func:`lab.workload.plan.check_against` then checks
the names it uses (partitions, accounts, QOS) against the rest of the blueprint.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from lab.spec.strict import Strict

# The classes the DCGM shim can shape GPU activity for (lab/dcgm/workloads.py PROFILES); a unit test
# keeps the two lists equal.
WorkloadClassName = Literal["training", "inference", "interactive"]
WORKLOAD_CLASSES: tuple[str, ...] = get_args(WorkloadClassName)
Outcome = Literal["completed", "failed", "cancelled", "timeout"]


class Arrivals(Strict):
    """Poisson arrivals whose rate follows the hour of the day and the day of the week.

    The shape has mean 1 over a week, so ``gpu_jobs_per_gpu_per_day`` is the long-run average rate.
    """

    gpu_jobs_per_gpu_per_day: float = Field(gt=0, le=1000)
    diurnal_peak_to_trough: float = Field(ge=1, le=100, description="busiest hour ÷ quietest hour")
    peak_hour: float = Field(ge=0, lt=24, description="hour of day (0-24) with the most submissions")
    weekend_factor: float = Field(gt=0, le=1, description="Saturday/Sunday rate ÷ weekday rate")


class Sizes(Strict):
    """GPUs per job: a log-normal rounded to powers of two, fitted to the trace's median and mean."""

    median_gpus: int = Field(ge=1, le=1024)
    mean_gpus: float = Field(gt=0)
    max_gpus: int = Field(ge=1, le=65536, description="the trace's largest job; the tail stops here")

    @model_validator(mode="after")
    def _fits(self) -> Sizes:
        if self.median_gpus & (self.median_gpus - 1):
            raise ValueError(
                f"median_gpus {self.median_gpus} is not a power of two; sizes are drawn as powers of "
                "two (1, 2, 4, 8 … GPUs). Fix: use the trace's median (1 in every trace)"
            )
        if not self.median_gpus <= self.mean_gpus <= self.max_gpus:
            raise ValueError(
                f"mean_gpus {self.mean_gpus} must lie between median_gpus {self.median_gpus} and "
                f"max_gpus {self.max_gpus}: a heavy tail puts the mean above the median. "
                "Fix: copy median, mean and max from the same trace row"
            )
        return self


class LogNormalFit(Strict):
    """A log-normal fixed by a trace's median and mean (seconds)."""

    median_s: float = Field(gt=0)
    mean_s: float = Field(gt=0)

    @model_validator(mode="after")
    def _mean_above_median(self) -> LogNormalFit:
        if self.mean_s <= self.median_s:
            raise ValueError(
                f"mean_s {self.mean_s} must be larger than median_s {self.median_s}: a log-normal's "
                "mean always exceeds its median. Fix: copy both from the same trace row"
            )
        return self


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
    timeout_share_of_failed: float = Field(ge=0, lt=1)

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


class WorkloadClassSpec(Strict):
    """One kind of job: where it runs and who submits it."""

    name: WorkloadClassName
    share: float = Field(gt=0, le=1, description="fraction of all jobs")
    partition: str
    accounts: list[str] = Field(default_factory=list, description="submitting accounts; empty = all")
    high_qos_share: float = Field(default=0, ge=0, le=1, description="fraction submitted with QOS high")


class WorkloadSpec(Strict):
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    time_scale: float = Field(
        default=1, ge=1, le=100_000, description="real seconds per lab second (1 = real time)"
    )
    arrivals: Arrivals
    sizes: Sizes
    durations: LogNormalFit
    queue: LogNormalFit
    outcomes: Outcomes
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
