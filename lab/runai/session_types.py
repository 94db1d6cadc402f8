"""Inputs and outputs of one scheduling session (plain, frozen data; see :mod:`lab.runai.scheduler`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class QueueSpec:
    project: str
    department: str
    pool: str
    quota: float
    over_quota_weight: float
    limit: float  # -1 unlimited


@dataclass(frozen=True, slots=True)
class DepartmentSpec:
    name: str
    pool: str
    quota: float
    over_quota_weight: float
    limit: float


@dataclass(frozen=True, slots=True)
class Job:
    uid: str
    namespace: str
    name: str
    podgroup: str
    project: str
    pool: str
    priority: int
    preemptible: bool
    pods: int
    gpus_per_pod: int
    submitted_at: float
    # (node, gpu indices) per pod while allocated; empty while pending.
    placement: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod


@dataclass(frozen=True, slots=True)
class Snapshot:
    queues: Sequence[QueueSpec]
    departments: Sequence[DepartmentSpec]
    # node -> (pool, free GPU indices in order)
    nodes: dict[str, tuple[str, tuple[int, ...]]]
    pending: Sequence[Job]
    running: Sequence[Job]


@dataclass(frozen=True, slots=True)
class Unschedulable:
    reason: str  # "" for node fit / fair share, else an UnschedulableReason
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    victim: Job
    action: str
    preemptor: Job


@dataclass(slots=True)
class SessionResult:
    binds: dict[str, tuple[tuple[str, tuple[int, ...]], ...]] = field(default_factory=dict)
    evictions: list[Eviction] = field(default_factory=list)
    unschedulable: dict[str, Unschedulable] = field(default_factory=dict)
    fair_share: dict[tuple[str, str], float] = field(default_factory=dict)  # (pool, queue) -> GPUs
    # (verbosity, level, action, message) as KAI's InfraLogger would write them.
    logs: list[tuple[int, str, str, str]] = field(default_factory=list)
    scheduled: dict[str, int] = field(default_factory=dict)
    acted_on: dict[str, int] = field(default_factory=dict)
    simulated: dict[str, int] = field(default_factory=dict)
    preemption_attempts: int = 0

    def count(self, table: dict[str, int], action: str, n: int = 1) -> None:
        table[action] = table.get(action, 0) + n
