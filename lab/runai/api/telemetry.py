"""Telemetry answers of the Run:ai 2.20 API (schema ``TelemetryResponse``): one current value, or one
per combination of the ``groupBy`` fields, from the driver's latest look at the cluster (pure).

A value is the sum over the rows (nodes, workloads, project or department queues per node pool) that
pass the filters; each group is ``{key: <groupBy field>, value: <id>, name: <display name>}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.runai.api import measures
from lab.runai.api.params import iso
from lab.runai.cluster_state import ALLOCATED, ClusterState

Obj = dict[str, Any]


@dataclass(frozen=True)
class Row:
    groups: Mapping[str, tuple[str, str]]  # groupBy field → (id, display name)
    values: Mapping[str, float]


def number(value: float) -> str:
    """A value as the reference's string: whole numbers without a fraction."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def response(telemetry_type: str, at: float, rows: Iterable[Row], group_by: Sequence[str]) -> Obj:
    sums: dict[tuple[tuple[str, str], ...], float] = {}
    for row in rows:
        if telemetry_type not in row.values:
            continue
        key = tuple(row.groups[field] for field in group_by)
        sums[key] = sums.get(key, 0.0) + row.values[telemetry_type]
    values: list[Obj]
    if not group_by:
        values = [{"value": number(sums.get((), 0.0))}]
    else:
        values = [
            {
                "value": number(total),
                "groups": [
                    {"key": field, "value": ident, "name": name}
                    for field, (ident, name) in zip(group_by, key, strict=True)
                ],
            }
            for key, total in sorted(sums.items())
        ]
    return {"type": telemetry_type, "timestamp": iso(at), "values": values}


def node_rows(cluster: ClusterState, pool: str | None) -> list[Row]:
    cid, name = cluster.bp.cluster_id, cluster.bp.name
    return [
        Row(
            {"ClusterId": (cid, name), "Nodepool": (r.pool, r.pool), "Node": (r.node, r.node)},
            r.values,
        )
        for r in measures.node_rows(cluster)
        if pool is None or r.pool == pool
    ]


def workload_rows(cluster: ClusterState, pool: str | None, department: str | None) -> list[Row]:
    cid, name = cluster.bp.cluster_id, cluster.bp.name
    rows = []
    for w in cluster.workloads.values():
        if (pool is not None and w.nodepool != pool) or (
            department is not None and w.department != department
        ):
            continue
        current = w.nodepool if any(p.node for p in w.pods) else ""
        groups = {
            "ClusterId": (cid, name),
            "DepartmentId": (w.department, w.department),
            "ProjectId": (w.project, w.project),
            "Type": (w.workload_type, w.workload_type),
            "CurrentNodepools": (current, current),
            "Phase": (w.phase.value, w.phase.value),
        }
        gpus = float(w.allocated_gpus()) if w.phase in ALLOCATED else 0.0
        rows.append(Row(groups, {"WORKLOADS_COUNT": 1.0, "GPU_ALLOCATION": gpus}))
    return rows


def queue_rows(cluster: ClusterState, pool: str | None, department: str | None, projects: bool) -> list[Row]:
    """Project queues (groups ClusterId, NodepoolId, ParentId; ``department`` filters by parent) or
    department queues (group CLUSTER_ID; ``department`` filters by name), one row per node pool."""
    cid, name = cluster.bp.cluster_id, cluster.bp.name
    rows = measures.project_rows(cluster) if projects else measures.department_rows(cluster)
    found = []
    for r in rows:
        owner = r.parent if projects else r.name
        if (pool is not None and r.pool != pool) or (department is not None and owner != department):
            continue
        groups = {"ClusterId": (cid, name), "NodepoolId": (r.pool, r.pool), "ParentId": (r.parent, r.parent)}
        found.append(Row(groups if projects else {"CLUSTER_ID": (cid, name)}, r.values))
    return found
