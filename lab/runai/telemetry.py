"""A subset of the Run:ai control-plane Metrics and Telemetry API (pure: state + query -> JSON).

Shapes from the control-plane OpenAPI spec as generated into runai-professional-services/runapy
(``runai/models/telemetry_response.py``, ``telemetry_response_values_inner_groups_inner.py``,
``event1.py``, ``get_workload_events200_response.py``):

- ``TelemetryResponse{type, timestamp, values: [{value (string), groups: [{key, value, name}]}]}``
- ``GetWorkloadEvents200Response{next, events: [{createdAt, id, type, clusterId, message, reason,
  source, involvedObject{uid, kind, name, namespace}}]}``

Served: ``GET /api/v1/workloads/telemetry`` (WORKLOADS_COUNT, groupBy Phase/ProjectId/Type/
CurrentNodepools), ``GET /api/v1/nodes/telemetry`` (ALLOCATED_GPUS, IDLE_ALLOCATED_GPUS, FREE_GPUS,
groupBy ClusterId/Nodepool/Node) and ``GET /api/v1/workloads/{workloadId}/events``. A group's ``key``
echoes the requested groupBy value (its exact spelling in responses is PENDING, signals/runai.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lab.runai.cluster_state import Workload
from lab.runai.k8s_events import rfc3339
from lab.runai.simulation import Simulation

WORKLOAD_TYPES = ("WORKLOADS_COUNT",)
WORKLOAD_GROUPS = ("Phase", "ProjectId", "Type", "CurrentNodepools", "ClusterId", "DepartmentId")
NODE_TYPES = ("ALLOCATED_GPUS", "IDLE_ALLOCATED_GPUS", "FREE_GPUS")
NODE_GROUPS = ("ClusterId", "Nodepool", "Node")
PENDING_TYPES = {
    "PENDING_TIME_DISTRIBUTION": "its bucket grouping is not confirmed by the v1.224.0 spec read here",
}


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"code": self.status, "message": self.message}


def _one(query: Mapping[str, Sequence[str]], name: str) -> str:
    values = query.get(name) or []
    if not values or not values[0]:
        raise ApiError(400, f"query parameter {name} is required")
    return values[0]


def _group_by(query: Mapping[str, Sequence[str]], allowed: Sequence[str]) -> list[str]:
    groups = [g for value in query.get("groupBy", []) for g in value.split(",") if g]
    bad = [g for g in groups if g not in allowed]
    if bad:
        raise ApiError(400, f"groupBy {bad} not supported; use {', '.join(allowed)}")
    return groups


def _response(
    kind: str, sim: Simulation, counts: Mapping[tuple[tuple[str, str, str], ...], float]
) -> dict[str, Any]:
    values = [
        {"value": _value(v), "groups": [{"key": k, "value": val, "name": name} for k, val, name in key]}
        for key, v in sorted(counts.items())
    ]
    return {"type": kind, "timestamp": rfc3339(sim.now()), "values": values}


def _value(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def workloads_telemetry(sim: Simulation, query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    kind = _one(query, "telemetryType")
    if kind in PENDING_TYPES:
        raise ApiError(501, f"telemetryType {kind} is not emulated: {PENDING_TYPES[kind]}")
    if kind not in WORKLOAD_TYPES:
        raise ApiError(400, f"telemetryType {kind!r} not supported; use {', '.join(WORKLOAD_TYPES)}")
    groups = _group_by(query, WORKLOAD_GROUPS)
    counts: dict[tuple[tuple[str, str, str], ...], float] = {}
    for w in sim.workloads.values():
        key = tuple(_workload_group(sim, w, g) for g in groups)
        counts[key] = counts.get(key, 0.0) + 1.0
    return _response(kind, sim, counts)


def _workload_group(sim: Simulation, w: Workload, group: str) -> tuple[str, str, str]:
    by = {
        "Phase": (w.phase.value, w.phase.value),
        "ProjectId": (w.project, w.project),
        "DepartmentId": (w.department, w.department),
        "Type": (w.workload_type, w.workload_type),
        "CurrentNodepools": (w.nodepool, w.nodepool),
        "ClusterId": (sim.bp.cluster_id, sim.bp.name),
    }
    value, name = by[group]
    return (group, value, name)


def nodes_telemetry(sim: Simulation, query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    kind = _one(query, "telemetryType")
    if kind not in NODE_TYPES:
        raise ApiError(400, f"telemetryType {kind!r} not supported; use {', '.join(NODE_TYPES)}")
    groups = _group_by(query, NODE_GROUPS)
    counts: dict[tuple[tuple[str, str, str], ...], float] = {}
    for node in sim.nodes.values():
        for gpu in range(node.gpus):
            allocated = gpu in node.holders
            stat = sim.gpu_stats.get((node.name, gpu))
            idle = allocated and (stat is None or stat.util_pct == 0)
            free = not allocated and gpu not in node.unhealthy
            hit = {"ALLOCATED_GPUS": allocated, "IDLE_ALLOCATED_GPUS": idle, "FREE_GPUS": free}[kind]
            key = tuple(
                (
                    g,
                    *{
                        "ClusterId": (sim.bp.cluster_id, sim.bp.name),
                        "Nodepool": (node.pool, node.pool),
                        "Node": (node.name, node.name),
                    }[g],
                )
                for g in groups
            )
            counts[key] = counts.get(key, 0.0) + (1.0 if hit else 0.0)
    return _response(kind, sim, counts)


def workload_events(sim: Simulation, workload_id: str, query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    w = sim.workloads.get(workload_id)
    if w is None:
        raise ApiError(
            404,
            f"workload {workload_id} not found (finished workloads are kept "
            f"{sim.bp.lifecycle.retention_s:g} s)",
        )
    uids = [w.podgroup_uid, *(p.uid for p in w.pods)]
    events = sorted(
        (e for uid in uids for e in sim.events.by_object.get(uid, [])),
        key=lambda e: (e["lastTimestamp"], e["metadata"]["name"]),
    )
    offset = int((query.get("offset") or ["0"])[0] or 0)
    limit = int((query.get("limit") or ["100"])[0] or 100)
    page = events[offset : offset + limit]
    out: dict[str, Any] = {
        "events": [
            {
                "createdAt": e["lastTimestamp"],
                "id": e["metadata"]["name"],
                "type": e["type"],
                "clusterId": sim.bp.cluster_id,
                "message": e["message"],
                "reason": e["reason"],
                "source": e["source"]["component"],
                "involvedObject": {k: e["involvedObject"][k] for k in ("uid", "kind", "name", "namespace")},
            }
            for e in page
        ]
    }
    if offset + limit < len(events):
        out["next"] = offset + limit
    return out
