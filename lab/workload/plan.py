"""The plan: which jobs a cluster of the blueprint's size would see, drawn from trace statistics.

Pure and deterministic: the same blueprint and seed give the same jobs, with no cluster and no clock.
Times are *real* seconds from the plan's start (Monday 00:00); the submitter divides them by
``time_scale``. What the plan draws, and from what:

* arrivals — a Poisson process (thinning) whose rate is ``gpu_jobs_per_gpu_per_day`` × GPUs, shaped
  by the hour of the day and the day of the week (the shape averages 1 over a week);
* class, user, QOS — class by its share; a user of the class's accounts, uniformly; QOS ``high`` for
  the class's ``high_qos_share``;
* outcome — completed / cancelled / failed by the trace's count shares; a stated share of the
  failures are timeouts (the traces count TIMEOUT as failed);
* GPUs — :class:`lab.workload.fit.SizeTable`, capped by the partition; above one node a job takes
  whole nodes;
* run time — :class:`lab.workload.fit.OutcomeDurations`. A job asks for the longest time its
  partition and QOS allow (Slurm's default when a job gives no ``--time``); one that needs longer
  (the traces have multi-day jobs) runs into that limit and times out. A planned timeout asked for
  whole minutes less than it needed. Either way a timeout job runs exactly its limit.

Queue waits are not planned: Slurm decides them. The trace's queue log-normal is kept as the
reference the run summary compares Slurm's waits with.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from itertools import takewhile
from typing import Any

from lab.spec.slurm_blueprint import Blueprint, BlueprintError, Partition
from lab.spec.workload_spec import Outcome, WorkloadClassSpec, WorkloadSpec
from lab.workload.fit import OutcomeDurations, SizeTable

DAY_S = 86_400
WEEK_S = 7 * DAY_S
# Failure signatures a failed job prints (jobscript.py renders them); drawn with equal weight.
FAILURE_KINDS = ("cuda_illegal_address", "cuda_out_of_memory", "nccl_timeout", "python_exception")
# A job that is not planned to time out ends at least this long before its limit.
LIMIT_MARGIN_S = 60


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    blueprint: str
    seed: int
    hours: float
    time_scale: float
    total_gpus: int
    jobs: tuple[PlannedJob, ...]


class Model:
    """The fitted distributions of one blueprint's workload; :meth:`jobs` draws from them."""

    def __init__(self, blueprint: Blueprint, spec: WorkloadSpec | None = None) -> None:
        spec = spec if spec is not None else _spec_of(blueprint)
        _raise_problems(blueprint, spec, "the blueprint")
        self.blueprint = blueprint
        self.spec = spec
        self.gpus_per_node = blueprint.nodes.shape.gpus
        self.total_gpus = blueprint.nodes.count * self.gpus_per_node
        arrivals = spec.arrivals
        self.mean_rate_per_s = arrivals.gpu_jobs_per_gpu_per_day * self.total_gpus / DAY_S
        self._amplitude = (arrivals.diurnal_peak_to_trough - 1) / (arrivals.diurnal_peak_to_trough + 1)
        self._week_norm = (5 + 2 * arrivals.weekend_factor) / 7
        self._peak_shape = (1 + self._amplitude) / self._week_norm
        self.sizes = SizeTable(spec.sizes.median_gpus, spec.sizes.mean_gpus, spec.sizes.max_gpus)
        outcomes = spec.outcomes
        self.count_shares = outcomes.by_count.normalised()
        self.durations = OutcomeDurations(
            spec.durations.median_s,
            spec.durations.mean_s,
            self.count_shares,
            outcomes.by_gpu_time.normalised(),
        )
        partitions = {p.name: p for p in blueprint.partitions}
        qos_wall = {q.name: _seconds(q.max_wall) for q in blueprint.qos if q.max_wall}
        self._classes = [_ClassDraw(c, partitions[c.partition], blueprint, qos_wall) for c in spec.classes]

    def shape(self, t_s: float) -> float:
        """Arrival-rate multiplier at ``t_s`` seconds after Monday 00:00; averages 1 over a week."""
        hour = (t_s % DAY_S) / 3600
        diurnal = 1 + self._amplitude * math.cos(2 * math.pi * (hour - self.spec.arrivals.peak_hour) / 24)
        weekend = (t_s % WEEK_S) >= 5 * DAY_S
        return diurnal * (self.spec.arrivals.weekend_factor if weekend else 1.0) / self._week_norm

    def jobs(self, seed: int, week_offset_s: float = 0.0) -> Iterator[PlannedJob]:
        """An endless, reproducible stream of jobs in submission order.

        ``week_offset_s`` starts the plan that far into the week (0 = Monday 00:00); live mode passes
        the wall clock's, so the daily peak falls in the lab's afternoon. ``submit_s`` still counts
        from the plan's start.
        """
        # One generator per aspect, so changing e.g. class shares does not move the arrival times.
        arrivals, who, outcome_rng, size_rng, time_rng = (
            random.Random(f"aifactory-lab/{seed}/{aspect}")
            for aspect in ("arrivals", "who", "outcome", "size", "time")
        )
        peak_rate = self.mean_rate_per_s * self._peak_shape
        cumulative_class = _cumulative([c.spec.share for c in self._classes])
        t = week_offset_s
        index = 0
        while True:
            t += arrivals.expovariate(peak_rate)
            if arrivals.random() * self._peak_shape > self.shape(t):
                continue  # thinning: keep a candidate with probability rate(t) / peak rate
            drawn = self._classes[_pick(cumulative_class, who.random())]
            user, account = drawn.users[who.randrange(len(drawn.users))]
            qos = "high" if who.random() < drawn.spec.high_qos_share else "normal"
            outcome = self._outcome(outcome_rng)
            failure = FAILURE_KINDS[outcome_rng.randrange(len(FAILURE_KINDS))]
            gpus = min(self.sizes.draw(size_rng), drawn.capacity_gpus)
            nodes = max(1, math.ceil(gpus / self.gpus_per_node))
            if nodes > 1:
                gpus = nodes * self.gpus_per_node
            limit_s = drawn.limit_s(qos)
            duration_s, time_limit_s, outcome = self._run_time(time_rng, outcome, limit_s)
            yield PlannedJob(
                index=index,
                submit_s=round(t - week_offset_s, 3),
                workload_class=drawn.spec.name,
                user=user,
                account=account,
                partition=drawn.partition.name,
                qos=qos,
                gpus=gpus,
                nodes=nodes,
                duration_s=duration_s,
                time_limit_s=time_limit_s,
                outcome=outcome,
                failure=failure if outcome == "failed" else None,
            )
            index += 1

    def _outcome(self, rng: random.Random) -> Outcome:
        shares = self.count_shares
        draw = rng.random()
        timeout = rng.random() < self.spec.outcomes.timeout_share_of_failed
        if draw < shares["completed"]:
            return "completed"
        if draw < shares["completed"] + shares["cancelled"]:
            return "cancelled"
        return "timeout" if timeout else "failed"

    def _run_time(self, rng: random.Random, outcome: Outcome, limit_s: int) -> tuple[float, int, Outcome]:
        """(run seconds, limit seconds, outcome): a job that needs longer than its limit times out."""
        needed = self.durations.draw(rng, "failed" if outcome == "timeout" else outcome)
        if outcome == "timeout":  # asked for whole minutes less than it needed
            asked = min(limit_s, max(60, math.floor(needed / 60) * 60))
            return float(asked), asked, "timeout"
        if needed >= limit_s:  # the traces have multi-day jobs; here they run into the wall
            return float(limit_s), limit_s, "timeout"
        # Ending within the last minute would race Slurm's limit check: end a minute early.
        return round(max(1.0, min(needed, limit_s - LIMIT_MARGIN_S)), 3), limit_s, outcome


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


def plan(
    blueprint: Blueprint, hours: float, seed: int | None = None, spec: WorkloadSpec | None = None
) -> Plan:
    """Every job submitted in the first ``hours`` real hours, for the blueprint's workload."""
    model = Model(blueprint, spec)
    chosen = model.spec.seed if seed is None else seed
    horizon = hours * 3600
    jobs = tuple(takewhile(lambda job: job.submit_s < horizon, model.jobs(chosen)))
    return Plan(blueprint.name, chosen, hours, model.spec.time_scale, model.total_gpus, jobs)


def check_against(blueprint: Blueprint, source: str) -> WorkloadSpec:
    """The blueprint's workload, its names checked against the blueprint; errors name file, field, fix."""
    spec = _spec_of(blueprint, source)
    _raise_problems(blueprint, spec, source)
    try:
        Model(blueprint, spec)
    except ValueError as error:  # a fit the published figures do not allow (fit.FitError)
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
