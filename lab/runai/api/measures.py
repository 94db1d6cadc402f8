"""The numbers behind the lab's Run:ai API, from the same cluster state the ``runai_*`` series are
computed from (pure). Each value names, in ``signals/runai.md``, the series it equals, so a test can
hold the API against Prometheus at the same instant.

Scopes of the metrics history: ``cluster``, ``nodepool/<name>`` and ``workload/<id>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.runai.cluster_state import ALLOCATED, ClusterState, Node, PodPhase, Workload

MIB = 2**20
CLUSTER = "cluster"


def nodepool_scope(pool: str) -> str:
    return f"nodepool/{pool}"


def workload_scope(uid: str) -> str:
    return f"workload/{uid}"


def _gpu_values(cluster: ClusterState, nodes: list[Node], quota: int) -> dict[str, float]:
    utils = [
        stat.util_pct
        for node in nodes
        for gpu in range(node.gpus)
        if (stat := cluster.gpu_stats.get((node.name, gpu))) is not None
    ]
    values = {
        "TOTAL_GPU_NODES": float(len(nodes)),
        "TOTAL_GPU": float(sum(n.gpus for n in nodes)),
        "GPU_QUOTA": float(quota),
        "ALLOCATED_GPU": float(sum(len(n.holders) for n in nodes)),
    }
    if utils:  # the mean of runai_gpu_utilization_per_gpu, in its unit (%)
        values["GPU_UTILIZATION"] = sum(utils) / len(utils)
    return values


def pool_values(cluster: ClusterState, pool: str | None) -> dict[str, float]:
    """Cluster metrics of one node pool, or of the whole cluster when ``pool`` is None."""
    bp = cluster.bp
    nodes = [n for n in cluster.nodes.values() if pool is None or n.pool == pool]
    pools = [p.name for p in bp.node_pools if pool is None or p.name == pool]
    quota = sum(bp.quota(project.name, name).gpu for project in bp.projects for name in pools)
    return _gpu_values(cluster, nodes, quota)


def workload_values(cluster: ClusterState, w: Workload) -> dict[str, float]:
    """Workload metrics; the allocation ones only while the workload holds its pods' resources,
    as the series they equal exist only then."""
    live = w.pods
    values = {
        "POD_COUNT": float(len(live)),
        "RUNNING_POD_COUNT": float(sum(p.phase is PodPhase.RUNNING for p in live)),
    }
    if w.phase not in ALLOCATED:
        return values
    values["GPU_ALLOCATION"] = float(w.allocated_gpus())
    values["CPU_REQUEST_CORES"] = w.pods_count * w.cpu_millis_per_pod / 1000.0
    values["CPU_MEMORY_REQUEST_BYTES"] = float(w.pods_count * w.memory_bytes_per_pod)
    stats = [
        stat
        for pod in live
        if pod.node is not None
        for gpu in pod.gpus
        if (stat := cluster.gpu_stats.get((pod.node, gpu))) is not None
    ]
    if stats:
        values["GPU_UTILIZATION"] = sum(s.util_pct for s in stats) / len(stats)
        values["GPU_MEMORY_USAGE_BYTES"] = sum(s.fb_used_mib for s in stats) * MIB
    return values


def snapshot(cluster: ClusterState) -> dict[str, dict[str, float]]:
    """Every scope's metric values at one look at the cluster: what the history keeps."""
    values = {CLUSTER: pool_values(cluster, None)}
    for pool in cluster.bp.node_pools:
        values[nodepool_scope(pool.name)] = pool_values(cluster, pool.name)
    for w in cluster.workloads.values():
        values[workload_scope(w.uid)] = workload_values(cluster, w)
    return values


@dataclass(frozen=True)
class NodeRow:
    """One node's telemetry values, with the fields ``groupBy`` reads."""

    node: str
    pool: str
    values: dict[str, float]


def node_rows(cluster: ClusterState) -> list[NodeRow]:
    # The CPU and memory the allocated workloads' pods request, per node, in one pass over the
    # workloads (a pass per node is 2 million pod visits at KAI's scale: 500 nodes, 4,000 pods).
    requested: dict[str, list[float]] = {}
    for w in cluster.workloads.values():
        if w.phase in ALLOCATED:
            for p in w.pods:
                if p.node is None:  # not bound: requests nothing of a node yet
                    continue
                cpu_mem = requested.setdefault(p.node, [0.0, 0.0])
                cpu_mem[0] += w.cpu_millis_per_pod / 1000.0
                cpu_mem[1] += w.memory_bytes_per_pod
    rows = []
    for node in cluster.nodes.values():
        cpu, mem = requested.get(node.name, (0.0, 0.0))
        stats = [s for g in range(node.gpus) if (s := cluster.gpu_stats.get((node.name, g))) is not None]
        ready_gpus = node.gpus - len(node.unhealthy)
        values = {
            "READY_GPU_NODES": 1.0,  # every kwok node is Ready (runai_gpu_count_per_node ready="true")
            "READY_GPUS": float(ready_gpus),
            "TOTAL_GPU_NODES": 1.0,
            "TOTAL_GPUS": float(node.gpus),
            "FREE_GPUS": float(len(node.free_gpus())),
            "ALLOCATED_GPUS": float(len(node.holders)),
            "TOTAL_CPU_CORES": float(node.cpu_cores),
            "ALLOCATED_CPU_CORES": cpu,
            "TOTAL_CPU_MEMORY_BYTES": float(node.memory_bytes),
            "ALLOCATED_CPU_MEMORY_BYTES": mem,
        }
        if stats:
            values["TOTAL_GPU_MEMORY_BYTES"] = sum(s.fb_total_mib for s in stats) * MIB
            values["USED_GPU_MEMORY_BYTES"] = sum(s.fb_used_mib for s in stats) * MIB
        rows.append(NodeRow(node.name, node.pool, values))
    return rows


@dataclass(frozen=True)
class QueueRow:
    """One project's or department's telemetry values in one node pool."""

    name: str
    parent: str  # a project's department; "" for a department
    pool: str
    values: dict[str, float]


def _allocations(workloads: list[Workload], pool: str) -> dict[str, float]:
    held = [w for w in workloads if w.phase in ALLOCATED and w.nodepool == pool]
    return {
        "GPU_ALLOCATION": float(sum(w.allocated_gpus() for w in held)),
        "GPU_ALLOCATION_NON_PREEMPTIBLE": float(sum(w.allocated_gpus() for w in held if not w.preemptible)),
        "CPU_ALLOCATION": sum(sum(p.allocated for p in w.pods) * w.cpu_millis_per_pod / 1000.0 for w in held),
    }


def project_rows(cluster: ClusterState) -> list[QueueRow]:
    bp, rows = cluster.bp, []
    for project in bp.projects:
        mine = [w for w in cluster.workloads.values() if w.project == project.name]
        for pool in bp.node_pools:
            values = {
                "GPU_QUOTA": float(bp.quota(project.name, pool.name).gpu),
                **_allocations(mine, pool.name),
            }
            rows.append(QueueRow(project.name, project.department, pool.name, values))
    return rows


def department_rows(cluster: ClusterState) -> list[QueueRow]:
    bp, rows = cluster.bp, []
    for department in bp.departments:
        mine = [w for w in cluster.workloads.values() if w.department == department.name]
        for pool in bp.node_pools:
            quota = department.quotas.get(pool.name)
            values = {"GPU_QUOTA": float(quota.gpu if quota else 0), **_allocations(mine, pool.name)}
            rows.append(QueueRow(department.name, "", pool.name, values))
    return rows
