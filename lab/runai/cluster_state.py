"""Plain state of a cluster as the driver sees it: nodes with specific GPUs, workloads, their pods; and
:class:`ClusterState`, what the ``runai_*`` families and the REST API read of a cluster.

Workload phases are values of the Run:ai API enum ``Phase`` (runapy's swagger, tag v1.224.0); pod
phases are Kubernetes ``PodPhase``. Names say what a thing is in the field's own words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from lab.blueprint.runai_blueprint import RunaiBlueprint
from lab.runai.dcgm_bridge import GpuStat


class Phase(StrEnum):
    """Run:ai workload phases used here (a subset of the API enum ``Phase``)."""

    CREATING = "Creating"
    PENDING = "Pending"
    INITIALIZING = "Initializing"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"


class PodPhase(StrEnum):
    """core/v1 PodPhase."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


ACTIVE = (Phase.CREATING, Phase.PENDING, Phase.INITIALIZING, Phase.RUNNING)
ALLOCATED = (Phase.INITIALIZING, Phase.RUNNING)
CONTAINER = "main"  # lab scheme: every pod has one container named "main"


@dataclass(slots=True)
class Pod:
    name: str
    uid: str
    created_at: float
    phase: PodPhase = PodPhase.PENDING
    node: str | None = None
    gpus: tuple[int, ...] = ()
    ip: str = ""

    @property
    def allocated(self) -> bool:
        return (
            self.node is not None and bool(self.gpus) and self.phase in (PodPhase.PENDING, PodPhase.RUNNING)
        )


def namespace_of(project: str) -> str:
    """The namespace Run:ai runs a project's workloads in (``runai-<project>``, Run:ai docs)."""
    return f"runai-{project}"


@dataclass(slots=True)
class Workload:
    uid: str
    name: str
    project: str
    department: str
    user: str
    workload_class: str
    workload_type: str
    dcgm_class: str
    priority_class: str
    priority: int
    preemptible: bool
    nodepool: str
    pods_count: int
    gpus_per_pod: int
    cpu_millis_per_pod: int
    memory_bytes_per_pod: int
    submitted_at: float
    run_seconds_needed: float
    will_fail: bool
    phase: Phase = Phase.CREATING
    pending_seconds: float = 0.0
    running_seconds: float = 0.0
    finished_at: float | None = None
    # The workload's live pods by name (a pod with a deletionTimestamp is not among them).
    pods: list[Pod] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        """Run:ai project namespace (API field ``namespace``, e.g. ``runai-proj-1``)."""
        return namespace_of(self.project)

    @property
    def gpus(self) -> int:
        return self.pods_count * self.gpus_per_pod

    @property
    def podgroup(self) -> str:
        """KAI PodGroup name ``pg-<topOwnerName>-<topOwnerUID>`` (annotation ``pod-group-name``)."""
        return f"pg-{self.name}-{self.uid}"

    def allocated_gpus(self) -> int:
        return sum(len(p.gpus) for p in self.pods if p.allocated)


@dataclass(slots=True)
class Node:
    name: str
    pool: str
    gpus: int
    cpu_cores: int
    memory_bytes: int
    model_name: str
    # GPU index -> (namespace, pod name) while a pod holds it.
    holders: dict[int, tuple[str, str]] = field(default_factory=dict)
    # GPUs the device plugin reports unhealthy (after an XID); never allocated again in a run.
    unhealthy: set[int] = field(default_factory=set)

    def free_gpus(self) -> list[int]:
        return [i for i in range(self.gpus) if i not in self.holders and i not in self.unhealthy]


def nodes_of(blueprint: RunaiBlueprint) -> dict[str, Node]:
    """The blueprint's nodes in order, no GPU held."""
    return {
        name: Node(
            name,
            pool.name,
            pool.gpus_per_node,
            pool.cpu_cores_per_node,
            pool.memory_bytes_per_node,
            pool.model_name,
        )
        for pool in blueprint.node_pools
        for name in pool.node_names()
    }


class ClusterState(Protocol):
    """What the ``runai_*`` families (:mod:`lab.runai.series_runai`) and the REST API (:mod:`lab.runai.api`)
    read of a cluster (``lab.kube.view.ClusterView`` builds it)."""

    @property
    def bp(self) -> RunaiBlueprint: ...

    @property
    def nodes(self) -> Mapping[str, Node]: ...

    @property
    def workloads(self) -> Mapping[str, Workload]: ...

    @property
    def gpu_stats(self) -> Mapping[tuple[str, int], GpuStat]:
        """(node, GPU index) -> the GPU's last DCGM values."""

    @property
    def last_active(self) -> Mapping[tuple[str, int], float]:
        """(node, GPU index) -> unix time its utilisation was last above 0."""

    def now(self) -> float: ...
