"""What ``hpc_job`` does to cardinality: series per job and the multiplier on labelled GPUs (pure).

dcgm-exporter copies every series of a GPU once per job id in its mapping file, so a GPU with
``k`` jobs has ``k·F`` series, F = families per GPU. The *multiplier* at an instant is the series of
the GPUs that carry ``hpc_job`` over what the same GPUs have unlabelled (``F`` each): the mean
number of jobs per labelled GPU, 1.0 when no GPU is shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lab.churn.jobs import SlurmJob


@dataclass(frozen=True)
class Multiplier:
    labelled_steps: int  # evaluations with at least one labelled GPU
    mean: float | None  # over those evaluations
    peak: float | None
    peak_jobs_on_one_gpu: float | None


def multiplier(
    labelled_series: Sequence[int],
    labelled_gpus: Sequence[int],
    max_series_on_one_gpu: Sequence[int],
    families_per_gpu: int,
) -> Multiplier:
    """Per evaluation: labelled series / (F × labelled GPUs); the busiest GPU's series / F."""
    if families_per_gpu < 1:
        return Multiplier(0, None, None, None)
    ratios = [
        series / (families_per_gpu * gpus)
        for series, gpus in zip(labelled_series, labelled_gpus, strict=True)
        if gpus > 0
    ]
    if not ratios:
        return Multiplier(0, None, None, None)
    return Multiplier(
        len(ratios),
        sum(ratios) / len(ratios),
        max(ratios),
        max(max_series_on_one_gpu) / families_per_gpu,
    )


@dataclass(frozen=True)
class JobSeries:
    job_id: str
    gpus: int | None  # from Slurm's accounting; None when sacct does not know the id
    series: int  # the most series carrying this id at one evaluation
    seen_steps: int

    def expected(self, families_per_gpu: int) -> int | None:
        return None if self.gpus is None else families_per_gpu * self.gpus


def job_series(per_step: Sequence[Mapping[str, int]], jobs: Iterable[SlurmJob]) -> list[JobSeries]:
    """One entry per ``hpc_job`` value seen, ordered by job id (numerically where possible)."""
    gpus = {job.job_id: job.gpus for job in jobs}
    peak: dict[str, int] = {}
    seen: dict[str, int] = {}
    for counts in per_step:
        for job_id, count in counts.items():
            peak[job_id] = max(peak.get(job_id, 0), count)
            seen[job_id] = seen.get(job_id, 0) + 1
    ordered = sorted(peak, key=lambda j: (not j.isdigit(), int(j) if j.isdigit() else 0, j))
    return [JobSeries(j, gpus.get(j), peak[j], seen[j]) for j in ordered]


def unseen_jobs(seen: Iterable[str], jobs: Iterable[SlurmJob], start: float, end: float) -> list[SlurmJob]:
    """GPU jobs that ran inside (start, end] but never showed up.

    Normally they ran between two scrapes; one that ran longer than a scrape interval points at a
    prolog that did not write its mapping file, or at failed scrapes.
    """
    seen_ids = set(seen)
    return [
        job
        for job in jobs
        if job.gpus > 0 and job.job_id not in seen_ids and job.start > start and job.end_exclusive <= end
    ]
