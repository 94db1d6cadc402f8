"""The data a churn report is made of: what Prometheus measured (:class:`Measurements`), what was
asked (:class:`Context`) and the results (:class:`Report`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.churn.bound import BoundResult
from lab.churn.cardinality import JobSeries, Multiplier
from lab.churn.jobs import SlurmJob
from lab.churn.series import ChurnRow, Tally
from lab.churn.window import Window


@dataclass
class Measurements:
    """What Prometheus says about one window, per evaluation where it varies in time."""

    window: Window
    dcgm_job: str
    tally: Tally
    hpc_job: list[dict[str, int]]  # job id → series carrying it
    labelled_gpus: list[int]
    max_series_on_one_gpu: list[int]
    families_per_gpu: int = 0
    nodes_by_gpus: dict[int, int] = field(default_factory=dict)  # GPUs per node → nodes
    node_series_at_rest: tuple[int, int] | None = None  # (min, max) over nodes without a job
    # (construct, "up" | "duration" | "duration_max") → [sum, count, max] over evaluations
    scrape_stats: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    tsdb_head: dict[str, float] = field(default_factory=dict)  # created, removed, restarts
    fresh_s: int = 16  # the hpc_job queries count series with a sample at most this old
    witness: str = "DCGM_FI_DEV_GPU_UTIL"  # the family whose sample times stand for a GPU's scrape
    queries: int = 0

    @classmethod
    def empty(cls, window: Window, dcgm_job: str) -> Measurements:
        steps = window.steps
        return cls(window, dcgm_job, Tally(steps), [{} for _ in range(steps)], [0] * steps, [0] * steps)


@dataclass(frozen=True)
class Context:
    """What the report was asked for; printed at its top."""

    lab: str
    prometheus_url: str
    command: str
    sacct_command: str
    time_scale: float
    time_scale_source: str
    scrape_intervals: dict[str, float]


@dataclass(frozen=True)
class Report:
    context: Context
    window: Window
    constructs: list[ChurnRow]
    families: list[ChurnRow]
    bound: BoundResult
    multiplier: Multiplier
    jobs: list[JobSeries]
    unseen: list[SlurmJob]
    measurements: Measurements
    slurm_jobs: list[SlurmJob]  # every GPU run sacct reported around the window

    @property
    def families_per_gpu(self) -> int:
        return self.measurements.families_per_gpu

    @property
    def mismatched_jobs(self) -> list[JobSeries]:
        """Jobs whose series are not F × their GPUs (e.g. a job seen mid-prolog on one node of two)."""
        f = self.families_per_gpu
        return [j for j in self.jobs if j.expected(f) is not None and j.series != j.expected(f)]

    @property
    def missed(self) -> list[SlurmJob]:
        """Unseen jobs that ran long enough that a scrape must have caught their mapping files."""
        longest = self.bound.tolerance.scrape_interval_s + 2
        return [job for job in self.unseen if job.end - job.start >= longest]
