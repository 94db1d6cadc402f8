"""The plan: which jobs a cluster of the blueprint's size would see, drawn from one trace's figures.

Pure and deterministic: the same blueprint and seed give the same jobs, with no cluster and no clock.
Times are *real* seconds from the plan's start (Monday 00:00); the submitter divides them by
``time_scale``. What the plan draws, and from what:

* arrivals — a Poisson process (thinning) at the trace's GPU jobs per GPU per day × the lab's GPUs
  in service (a node held drained takes no jobs), shaped by the hour of the day and the day of the
  week (the shape averages 1 over a week);
* GPUs, run time and outcome — together, from :class:`lab.workload.fit.JointModel` fitted to the same
  cluster, so big jobs run long and the GPU time per job is the trace's; a stated share of the
  failures are timeouts (the traces count TIMEOUT as failed);
* class, user, QOS — a class by its share among the classes whose partition the job fits (GPUs in
  service, time limit), as users pick a partition that can run their job; a user of the class's
  accounts, uniformly; QOS ``high`` for the class's ``high_qos_share`` of the jobs within its wall.

The lab is smaller than the trace's cluster. A job larger than every partition keeps its GPU time:
it runs on the largest partition's GPUs in service for proportionally longer (as a data-parallel job
on fewer GPUs does), so the cap does not lower the load; above one node a job takes whole nodes, also
with its GPU time kept. A job that still needs longer than its limit times out at the limit; that GPU
time is lost, and :func:`lab.workload.stats.describe` reports how much. A job asks for the longest
time its partition and QOS allow (Slurm's default when a job gives no ``--time``).

A plan starts mid-stream, as a real cluster is never empty: the jobs the same stream would have
running at the start are submitted at once (``warm_s`` says how long each had already run) with what
remains of their run. Queue waits are not planned: Slurm decides them. The trace's queue figures are
kept as the reference the run summary compares Slurm's waits with.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from itertools import takewhile
from typing import Any

from lab.blueprint.slurm_blueprint import Blueprint, BlueprintError, Partition
from lab.blueprint.workload_spec import Outcome, WorkloadClassSpec, WorkloadSpec
from lab.workload.fit import FitError, JointModel, SizeShare

DAY_S = 86_400
WEEK_S = 7 * DAY_S
# Failure signatures a failed job prints (jobscript.py renders them); drawn with equal weight.
FAILURE_KINDS = ("cuda_illegal_address", "cuda_out_of_memory", "nccl_timeout", "python_exception")
# A job that is not planned to time out ends at least this long before its limit.
LIMIT_MARGIN_S = 60
# Tolerances of the checks that the size table, the run CDF and the summary row are one cluster's:
# the tables are read from figures at bucket tops, which moves the means by a few percent.
MEAN_GPUS_TOLERANCE = 0.10
MEAN_RUN_TOLERANCE = 0.05
MEDIAN_RUN_TOLERANCE = 0.25


@dataclass(frozen=True, slots=True)
class PlannedJob:
    index: int
    submit_s: float  # real seconds after the plan's start (Monday 00:00)
    workload_class: str
    user: str
    account: str
    partition: str
    qos: str
    gpus: int
    nodes: int
    duration_s: float  # real seconds it runs once started; a timeout job runs its whole limit
    time_limit_s: int  # real seconds, whole minutes (Slurm limits are minutes)
    outcome: Outcome
    failure: str | None = None  # one of FAILURE_KINDS when outcome is "failed"
    trace_gpus: int = 0  # the trace's draw, before the lab's cap and whole nodes
    trace_run_s: float = 0.0  # the trace's draw, before the lab's cap and limits
    warm_s: float = 0.0  # real seconds it had run when the plan began (0: submitted within the plan)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def gpu_seconds(self) -> float:
        return self.gpus * self.duration_s


@dataclass(frozen=True)
class Plan:
    blueprint: str
    seed: int
    hours: float
    time_scale: float
    total_gpus: int
    jobs: tuple[PlannedJob, ...]
    gpus_in_service: int = 0


class Model:
    """The fitted distributions of one blueprint's workload; :meth:`jobs` draws from them."""

    def __init__(self, blueprint: Blueprint, spec: WorkloadSpec | None = None) -> None:
        spec = spec if spec is not None else _spec_of(blueprint)
        _raise_problems(blueprint, spec, "the blueprint")
        self.blueprint = blueprint
        self.spec = spec
        self.trace = spec.trace
        self.gpus_per_node = blueprint.nodes.shape.gpus
        self.total_gpus = blueprint.nodes.count * self.gpus_per_node
        self.gpus_in_service = (blueprint.nodes.count - len(blueprint.drained_nodes)) * self.gpus_per_node
        arrivals = spec.arrivals
        self.mean_rate_per_s = self.trace.gpu_jobs_per_gpu_per_day * self.gpus_in_service / DAY_S
        self._amplitude = (arrivals.diurnal_peak_to_trough - 1) / (arrivals.diurnal_peak_to_trough + 1)
        self._week_norm = (5 + 2 * arrivals.weekend_factor) / 7
        self._peak_shape = (1 + self._amplitude) / self._week_norm
        self.joint = joint_model(spec)
        partitions = {p.name: p for p in blueprint.partitions}
        qos_wall = {q.name: _seconds(q.max_wall) for q in blueprint.qos if q.max_wall}
        self._classes = [_ClassDraw(c, partitions[c.partition], blueprint, qos_wall) for c in spec.classes]
        largest = max(c.capacity_gpus for c in self._classes)
        self._fallback = [c for c in self._classes if c.capacity_gpus == largest]
        # The longest run a job can have here: the trace's longest, stretched by the cap, within limits.
        stretch = max(1.0, max(self.joint.sizes) / largest)
        self.longest_run_s = min(
            self.joint.longest_run_s * stretch, max(c.limit_s("normal") for c in self._classes)
        )

    def shape(self, t_s: float) -> float:
        """Arrival-rate multiplier at ``t_s`` seconds after Monday 00:00; averages 1 over a week."""
        hour = (t_s % DAY_S) / 3600
        diurnal = 1 + self._amplitude * math.cos(2 * math.pi * (hour - self.spec.arrivals.peak_hour) / 24)
        weekend = (t_s % WEEK_S) >= 5 * DAY_S
        return diurnal * (self.spec.arrivals.weekend_factor if weekend else 1.0) / self._week_norm

    def jobs(self, seed: int, week_offset_s: float = 0.0) -> Iterator[PlannedJob]:
        """An endless, reproducible stream of jobs in submission order, starting mid-stream.

        First come the jobs still running at the start (``submit_s`` 0, ``warm_s`` > 0), then the
        jobs submitted after it. ``week_offset_s`` starts the plan that far into the week (0 = Monday
        00:00); live mode passes the wall clock's, so the daily peak falls in the lab's afternoon.
        """
        stream = self._stream(seed, week_offset_s - self.longest_run_s)
        index = 0
        for job in stream:
            end_s = job.submit_s + job.duration_s
            if job.submit_s >= week_offset_s:
                yield _renumbered(job, index, job.submit_s - week_offset_s)
                index += 1
                break
            if end_s > week_offset_s:
                yield _warm(job, index, week_offset_s - job.submit_s)
                index += 1
        for job in stream:
            yield _renumbered(job, index, job.submit_s - week_offset_s)
            index += 1

    def _stream(self, seed: int, start_s: float) -> Iterator[PlannedJob]:
        """Jobs from ``start_s`` (seconds after a Monday 00:00, may be negative) on, ``submit_s`` on
        the same clock."""
        # One generator per aspect, so changing e.g. class shares does not move the arrival times.
        arrivals, who, outcome_rng, size_rng, time_rng = (
            random.Random(f"aifactory-lab/{seed}/{aspect}")
            for aspect in ("arrivals", "who", "outcome", "size", "time")
        )
        peak_rate = self.mean_rate_per_s * self._peak_shape
        t = start_s
        while True:
            t += arrivals.expovariate(peak_rate)
            if arrivals.random() * self._peak_shape > self.shape(t):
                continue  # thinning: keep a candidate with probability rate(t) / peak rate
            drawn = self.joint.draw(size_rng, time_rng, outcome_rng)
            timeout = outcome_rng.random() < self.spec.timeout_share_of_failed
            failure = FAILURE_KINDS[outcome_rng.randrange(len(FAILURE_KINDS))]
            outcome: Outcome = "timeout" if drawn.outcome == "failed" and timeout else drawn.outcome  # type: ignore[assignment]
            chosen = self._class_for(drawn.gpus, drawn.run_s, who.random())
            user, account = chosen.users[who.randrange(len(chosen.users))]
            gpus = min(drawn.gpus, chosen.capacity_gpus)
            nodes = max(1, math.ceil(gpus / self.gpus_per_node))
            if nodes > 1:
                gpus = nodes * self.gpus_per_node
            needed_s = drawn.run_s * drawn.gpus / gpus  # the cap and whole nodes keep the GPU time
            qos = (
                "high"
                if chosen.fits_high(needed_s) and who.random() < chosen.spec.high_qos_share
                else "normal"
            )
            duration_s, time_limit_s, outcome = _run_time(needed_s, outcome, chosen.limit_s(qos))
            yield PlannedJob(
                index=0,
                submit_s=round(t, 3),
                workload_class=chosen.spec.name,
                user=user,
                account=account,
                partition=chosen.partition.name,
                qos=qos,
                gpus=gpus,
                nodes=nodes,
                duration_s=duration_s,
                time_limit_s=time_limit_s,
                outcome=outcome,
                failure=failure if outcome == "failed" else None,
                trace_gpus=drawn.gpus,
                trace_run_s=round(drawn.run_s, 3),
            )

    def _class_for(self, gpus: int, run_s: float, draw: float) -> _ClassDraw:
        """A class by share among those whose partition fits the job; else one of the largest's."""
        fitting = [c for c in self._classes if c.fits(gpus, run_s)] or self._fallback
        return fitting[_pick(_cumulative([c.spec.share for c in fitting]), draw)]


def joint_model(spec: WorkloadSpec) -> JointModel:
    """The trace's joint model, checked against the trace's own published medians and means."""
    trace = spec.trace
    model = JointModel(
        [SizeShare(row.gpus, row.jobs, row.gpu_time) for row in trace.sizes],
        trace.gpu_seconds_per_job,
        trace.run_cdf,
        trace.outcomes.by_count.normalised(),
        trace.outcomes.by_gpu_time.normalised(),
    )
    checks = (
        ("gpus_per_job.mean", model.mean_gpus, trace.gpus_per_job.mean, MEAN_GPUS_TOLERANCE, "sizes"),
        ("run_s.mean", model.mean_run_s, trace.run_s.mean, MEAN_RUN_TOLERANCE, "sizes and gpu_seconds"),
        ("run_s.median", model.median_run_s, trace.run_s.median, MEDIAN_RUN_TOLERANCE, "run_cdf"),
    )
    for field, fitted, published, tolerance, source in checks:
        if abs(fitted / published - 1) > tolerance:
            raise FitError(
                f"trace.{field}: the {source} imply {fitted:,.1f}, the trace publishes {published:,.1f} "
                f"(more than {tolerance:.0%} apart). Fix: copy every trace figure from the same cluster"
            )
    return model


def _run_time(needed_s: float, outcome: Outcome, limit_s: int) -> tuple[float, int, Outcome]:
    """(run seconds, limit seconds, outcome): a job that needs longer than its limit times out."""
    if outcome == "timeout":  # asked for whole minutes less than it needed
        asked = min(limit_s, max(60, math.floor(needed_s / 60) * 60))
        return float(asked), asked, "timeout"
    if needed_s >= limit_s:
        return float(limit_s), limit_s, "timeout"
    # Ending within the last minute would race Slurm's limit check: end a minute early.
    return round(max(1.0, min(needed_s, limit_s - LIMIT_MARGIN_S)), 3), limit_s, outcome


def _renumbered(job: PlannedJob, index: int, submit_s: float) -> PlannedJob:
    return replace(job, index=index, submit_s=round(submit_s, 3))


def _warm(job: PlannedJob, index: int, ran_s: float) -> PlannedJob:
    """A job running when the plan begins: submitted at once with what remains of its run."""
    remaining = job.duration_s - ran_s
    limit_s = job.time_limit_s
    if job.outcome == "timeout":  # it still ends at its limit: the remaining minutes
        limit_s = max(60, math.ceil(remaining / 60) * 60)
        remaining = float(limit_s)
    return replace(
        job,
        index=index,
        submit_s=0.0,
        duration_s=round(max(1.0, remaining), 3),
        time_limit_s=limit_s,
        warm_s=round(ran_s, 3),
    )


@dataclass
class _ClassDraw:
    spec: WorkloadClassSpec
    partition: Partition
    users: list[tuple[str, str]]
    capacity_gpus: int
    partition_limit_s: int
    qos_wall_s: dict[str, int]

    def __init__(
        self, spec: WorkloadClassSpec, partition: Partition, blueprint: Blueprint, qos_wall: dict[str, int]
    ) -> None:
        self.spec = spec
        self.partition = partition
        accounts = set(spec.accounts or [a.name for a in blueprint.accounts])
        self.users = [(u.name, u.account) for u in blueprint.all_users if u.account in accounts]
        # Nodes the blueprint holds drained are no capacity: a job larger than the rest would never start.
        in_service = [n for n in blueprint.partition_nodes(partition) if n not in blueprint.drained_nodes]
        self.capacity_gpus = len(in_service) * blueprint.nodes.shape.gpus
        self.partition_limit_s = _seconds(partition.max_time) or 365 * DAY_S
        self.qos_wall_s = qos_wall

    def limit_s(self, qos: str) -> int:
        wall = self.qos_wall_s.get(qos)
        return min(self.partition_limit_s, wall) if wall else self.partition_limit_s

    def fits(self, gpus: int, run_s: float) -> bool:
        return gpus <= self.capacity_gpus and run_s < self.partition_limit_s - LIMIT_MARGIN_S

    def fits_high(self, run_s: float) -> bool:
        return run_s < self.limit_s("high") - LIMIT_MARGIN_S


def plan(
    blueprint: Blueprint, hours: float, seed: int | None = None, spec: WorkloadSpec | None = None
) -> Plan:
    """Every job submitted in the first ``hours`` real hours, for the blueprint's workload."""
    model = Model(blueprint, spec)
    chosen = model.spec.seed if seed is None else seed
    horizon = hours * 3600
    jobs = tuple(takewhile(lambda job: job.submit_s < horizon, model.jobs(chosen)))
    return Plan(
        blueprint.name, chosen, hours, model.spec.time_scale, model.total_gpus, jobs, model.gpus_in_service
    )


def check_against(blueprint: Blueprint, source: str) -> WorkloadSpec:
    """The blueprint's workload, its names checked against the blueprint; errors name file, field, fix."""
    spec = _spec_of(blueprint, source)
    _raise_problems(blueprint, spec, source)
    try:
        Model(blueprint, spec)
    except FitError as error:  # a fit the published figures do not allow
        raise BlueprintError(f"{source}: workload: {error}") from None
    return spec


def _raise_problems(blueprint: Blueprint, spec: WorkloadSpec, source: str) -> None:
    partitions = [p.name for p in blueprint.partitions]
    accounts = [a.name for a in blueprint.accounts]
    qos = {q.name for q in blueprint.qos} | {"normal"}
    problems = []
    for index, workload_class in enumerate(spec.classes):
        field = f"workload.classes.{index}"
        if workload_class.partition not in partitions:
            problems.append(
                f"{field}.partition: {workload_class.partition!r} is not a partition of this blueprint "
                f"(partitions: {', '.join(partitions)}). Fix: use one of them"
            )
        unknown = [a for a in workload_class.accounts if a not in accounts]
        if unknown:
            problems.append(
                f"{field}.accounts: {unknown} are not accounts of this blueprint ({', '.join(accounts)}). "
                "Fix: use declared accounts, or [] for all"
            )
        elif not [u for u in blueprint.all_users if u.account in (workload_class.accounts or accounts)]:
            problems.append(f"{field}.accounts: no user belongs to {workload_class.accounts}. Fix: add users")
        if workload_class.high_qos_share > 0 and "high" not in qos:
            problems.append(
                f"{field}.high_qos_share: the blueprint declares no QOS 'high'. Fix: add it under qos, "
                "or set the share to 0"
            )
    if problems:
        raise BlueprintError(
            f"{source}: {len(problems)} problem(s) in the blueprint:\n  - " + "\n  - ".join(problems)
        )


def _spec_of(blueprint: Blueprint, source: str = "the blueprint") -> WorkloadSpec:
    if blueprint.workload is None:
        raise BlueprintError(
            f"{source}: workload: the blueprint has no workload section. "
            "Fix: copy the `workload:` section of blueprints/default.yaml"
        )
    return blueprint.workload


def lab_limit_minutes(time_limit_s: int, time_scale: float) -> int:
    """The compressed limit Slurm is given: whole minutes, at least one."""
    return max(1, math.ceil(time_limit_s / time_scale / 60))


def _seconds(slurm_time: str | None) -> int:
    """Seconds of a Slurm time (``2-00:00:00``, ``00:30:00``, ``90`` minutes); 0 for UNLIMITED."""
    if not slurm_time or slurm_time == "UNLIMITED":
        return 0
    days, _, clock = slurm_time.rpartition("-")
    parts = [int(part) for part in clock.split(":")]
    if len(parts) == 1:
        seconds = parts[0] * 60
    else:
        while len(parts) < 3:
            parts.insert(0, 0)
        seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return int(days or 0) * DAY_S + seconds


def _cumulative(weights: list[float]) -> list[float]:
    total = sum(weights)
    running, result = 0.0, []
    for weight in weights:
        running += weight / total
        result.append(running)
    return result


def _pick(cumulative: list[float], draw: float) -> int:
    for index, edge in enumerate(cumulative):
        if draw < edge:
            return index
    return len(cumulative) - 1


def week_offset_now(epoch_s: float) -> float:
    """Seconds since local Monday 00:00 at ``epoch_s``: where a live plan starts in the week."""
    local = time.localtime(epoch_s)
    return float(local.tm_wday * DAY_S + local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec)
