"""Workloads and pods as the Run:ai 2.20 API shows them (schemas ``Workload``, ``WorkloadDetailed``,
``Pod1``), from the cluster state the driver builds of the API server's objects (pure).

Only fields whose value the lab knows are written, and the ones the schema requires (a workload's
``tenantId``, ``k8sPhase``, ``phaseUpdatedAt``, ``k8sPhaseUpdatedAt``, ``updatedAt``), which the SDK's
models refuse to do without: the lab's tenant, and the phase and its start as the cluster shows them
(lab choices, cantfind.md). Project, department and node-pool ids are their names (Run:ai numbers them;
the lab has no control plane to do so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lab.runai.api.params import Filter, bad_request, iso, iso_time
from lab.runai.cluster_state import ALLOCATED, CONTAINER, Phase, Pod, PodPhase, Workload

Obj = dict[str, Any]
# Lab choice (cantfind.md): the lab is one tenant; TenantId is an int32, this its schema's example.
TENANT_ID = 1001
_DATES = ("createdAt", "completedAt")


def _resources(gpus: float, cpu_millis: int, memory_bytes: int) -> Obj:
    return {
        "gpu": {"request": gpus},
        "cpu": {"request": cpu_millis / 1000.0},
        "cpuMemory": {"request": str(memory_bytes)},
    }


def _current_pools(w: Workload) -> list[str]:
    return [w.nodepool] if any(p.node for p in w.pods) else []


def _k8s_phase(w: Workload) -> str:
    """The workload's phase in Kubernetes' words (PodPhase): its end, else its pods' furthest."""
    if w.phase in (Phase.COMPLETED, Phase.FAILED):
        return (PodPhase.SUCCEEDED if w.phase is Phase.COMPLETED else PodPhase.FAILED).value
    running = any(p.phase is PodPhase.RUNNING for p in w.pods)
    return (PodPhase.RUNNING if running else PodPhase.PENDING).value


def _phase_since(w: Workload) -> float:
    """When the workload entered its phase: its end, its first pod's start, else its submission."""
    if w.finished_at is not None:
        return w.finished_at
    if w.phase is Phase.RUNNING:
        return w.submitted_at + w.pending_seconds
    return w.submitted_at


def workload(w: Workload, cluster_id: str) -> Obj:
    live = w.pods
    allocated = w.phase in ALLOCATED
    since = iso(_phase_since(w))
    return {
        "type": w.workload_type,
        "name": w.name,
        "id": w.uid,
        "source": "Other",  # submitted to the API server directly, neither by the CLI nor the control plane
        "priority": w.priority,
        "priorityClassName": w.priority_class,
        "submittedBy": w.user,
        "clusterId": cluster_id,
        "projectName": w.project,
        "projectId": w.project,
        "departmentName": w.department,
        "departmentId": w.department,
        "namespace": w.namespace,
        "createdAt": iso(w.submitted_at),
        "phase": w.phase.value,
        "phaseUpdatedAt": since,
        "k8sPhase": _k8s_phase(w),
        "k8sPhaseUpdatedAt": since,
        "updatedAt": since,
        "tenantId": TENANT_ID,
        "conditions": [],
        "runningPods": sum(p.phase is PodPhase.RUNNING for p in live),
        "requestedPods": {"number": w.pods_count},
        "requestedNodePools": [w.nodepool] if w.nodepool else [],
        "currentNodePools": _current_pools(w),
        "completedAt": iso(w.finished_at) if w.finished_at is not None else None,
        "deletedAt": None,
        "podsRequestedResources": _resources(w.gpus_per_pod, w.cpu_millis_per_pod, w.memory_bytes_per_pod),
        "allocatedResources": {
            "gpu": float(w.allocated_gpus()) if allocated else 0.0,
            "cpu": sum(p.allocated for p in live) * w.cpu_millis_per_pod / 1000.0 if allocated else 0.0,
        },
        "preemptible": w.preemptible,
    }


def workload_detailed(w: Workload, cluster_id: str) -> Obj:
    """``WorkloadDetailed``: a workload and its ``pendingSchedulingMessages`` (none the lab knows)."""
    return {**workload(w, cluster_id), "pendingSchedulingMessages": None}


def pod(w: Workload, p: Pod, cluster_id: str, image: str) -> Obj:
    return {
        "name": p.name,
        "priorityClassName": w.priority_class,
        "id": p.uid,
        "workloadId": w.uid,
        "clusterId": cluster_id,
        "projectId": w.project,
        "projectName": w.project,
        "workloadName": w.name,
        "nodeName": p.node,
        "createdAt": iso(p.created_at),
        "completedAt": None,
        "containers": [{"name": CONTAINER, "image": image}],
        "currentNodePool": w.nodepool if p.node else None,
        "requestedNodePools": [w.nodepool] if w.nodepool else [],
        "requestedResources": _resources(w.gpus_per_pod, w.cpu_millis_per_pod, w.memory_bytes_per_pod),
        "allocatedResources": {"gpu": float(len(p.gpus)) if p.allocated else 0.0},
        "k8sPhase": p.phase.value,
        # Required by Pod1; the lab keeps no pod status times, so its creation (lab choice).
        "k8sPhaseUpdatedAt": iso(p.created_at),
        "updatedAt": iso(p.created_at),
        "tenantId": TENANT_ID,
        "ip": p.ip or None,
        "deletedAt": None,
    }


def _field(w: Workload, name: str, cluster_id: str) -> str | float:
    if name == "allocatedGPU":
        return float(w.allocated_gpus()) if w.phase in ALLOCATED else 0.0
    if name == "nodepool":
        return w.nodepool
    if name in _DATES:
        at = w.submitted_at if name == "createdAt" else w.finished_at
        return at if at is not None else float("nan")
    return str(workload(w, cluster_id)[name])


def _number(term: Filter, dates: Sequence[str]) -> float:
    if term.field in dates:
        return iso_time(term.value, f"filterBy {term.field}")
    try:
        return float(term.value)
    except ValueError:
        raise bad_request(f"filterBy {term.field}{term.operator}{term.value!r}: not a number") from None


def compare(value: str | float, term: Filter, dates: Sequence[str] = _DATES) -> bool:
    """One ``filterBy`` term against a field's value: numbers and dates (the fields in ``dates``, as
    unix seconds) compare as numbers, the rest as text."""
    op = term.operator
    if isinstance(value, float):
        if op in ("=@", "!@", "=^", "=$"):
            raise bad_request(f"filterBy {term.field} takes ==, !=, <= and >= only")
        wanted = _number(term, dates)
        return {"==": value == wanted, "!=": value != wanted, "<=": value <= wanted, ">=": value >= wanted}[
            op
        ]
    text = term.value
    return {
        "==": value == text,
        "!=": value != text,
        "<=": value <= text,
        ">=": value >= text,
        "=@": text in value,
        "!@": text not in value,
        "=^": value.startswith(text),
        "=$": value.endswith(text),
    }[op]


def matches(w: Workload, cluster_id: str, term: Filter) -> bool:
    """One ``filterBy`` term against a workload."""
    return compare(_field(w, term.field, cluster_id), term)


def order(value: str | float) -> tuple[int, str | float]:
    """A ``sortBy`` key: a missing number (NaN) sorts last."""
    if isinstance(value, float):
        return (1, 0.0) if value != value else (0, value)
    return (0, value)


def sort_key(w: Workload, field: str, cluster_id: str) -> tuple[int, str | float]:
    """Workloads sort by ``sortBy``; a missing value (an unfinished workload's completedAt) sorts last."""
    return order(_field(w, field, cluster_id))


def listing(
    workloads: Sequence[Workload],
    cluster_id: str,
    terms: Sequence[Filter],
    search: str | None,
    sort_by: str | None,
    descending: bool,
    offset: int,
    limit: int,
) -> Obj:
    """The body of ``GET /api/v1/workloads``: ``{"workloads": [...], "next": <offset>}``."""
    chosen = [
        w
        for w in workloads
        if all(matches(w, cluster_id, t) for t in terms) and (not search or search in w.name)
    ]
    field = sort_by or "createdAt"
    chosen.sort(key=lambda w: (sort_key(w, field, cluster_id), w.name), reverse=descending)
    page = chosen[offset : offset + limit]
    body: Obj = {"workloads": [workload(w, cluster_id) for w in page]}
    if offset + limit < len(chosen):
        body["next"] = offset + limit
    return body
