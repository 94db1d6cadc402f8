"""Run:ai cluster families (docs 2.17/2.18) from a cluster's state (pure: state in, samples out).

In a real cluster several of these are Prometheus recording rules over DCGM and kube-state-metrics;
the lab computes them directly from the same allocations and the shim's GPU models, with the
documented names and labels. Workload-level series exist while the workload's Job does, which bounds
workload_id values by concurrent plus recently finished workloads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from lab.runai.cluster_state import ALLOCATED, ClusterState, Phase, Workload
from lab.runai.expfmt import Sample, labels


def runai_samples(cluster: ClusterState) -> Iterator[Sample]:
    cid = cluster.bp.cluster_id
    yield from _gpus_and_nodes(cluster, cid)
    yield from _quotas(cluster, cid)
    yield from _workloads(cluster, cid)


def _requested_per_node(cluster: ClusterState) -> dict[str, tuple[float, float]]:
    """CPU cores and memory bytes the allocated workloads' live pods request, per node (one pass over
    the workloads: a pass per node costs nodes x workloads, seconds at 500 nodes and 4,000 jobs)."""
    requested: dict[str, tuple[float, float]] = {}
    for w in cluster.workloads.values():
        if w.phase in ALLOCATED:
            for node, count in Counter(p.node for p in w.pods if p.node).items():
                cpu, mem = requested.get(node, (0.0, 0.0))
                requested[node] = (
                    cpu + count * w.cpu_millis_per_pod / 1000.0,
                    mem + count * w.memory_bytes_per_pod,
                )
    return requested


def _gpus_and_nodes(cluster: ClusterState, cid: str) -> Iterator[Sample]:
    requested = _requested_per_node(cluster)
    for node in cluster.nodes.values():
        base = {"clusterId": cid, "node": node.name}
        node_util = node_used = node_total = 0.0
        for gpu in range(node.gpus):
            stat = cluster.gpu_stats.get((node.name, gpu))
            g = labels({**base, "gpu": str(gpu)})
            yield "runai_allocated_gpu_count_per_gpu", g, 1.0 if gpu in node.holders else 0.0
            if stat is not None:
                yield "runai_gpu_utilization_per_gpu", g, stat.util_pct
                yield "runai_gpu_memory_used_mebibytes_per_gpu", g, stat.fb_used_mib
                yield "runai_gpu_memory_total_mebibytes_per_gpu", g, stat.fb_total_mib
                node_util += stat.util_pct
                node_used += stat.fb_used_mib
                node_total += stat.fb_total_mib
            last = cluster.last_active.get((node.name, gpu))
            if last is not None:
                yield "runai_last_gpu_utilization_time_per_gpu", g, last
        n = labels(base)
        yield "runai_gpu_utilization_per_node", n, node_util / node.gpus
        yield "runai_gpu_memory_used_mebibytes_per_node", n, node_used
        yield "runai_gpu_memory_total_mebibytes_per_node", n, node_total
        yield "runai_allocated_gpu_count_per_node", n, float(len(node.holders))
        yield "runai_mig_mode_gpu_count", n, 0.0
        schedulable = str(len(node.unhealthy) < node.gpus).lower()
        yield (
            "runai_gpu_count_per_node",
            labels({**base, "modelName": node.model_name, "ready": "true", "schedulable": schedulable}),
            float(node.gpus - len(node.unhealthy)),
        )
        yield "runai_node_nodepool", labels({"node": node.name, "nodepool": node.pool}), 1.0
        cpu, mem = requested.get(node.name, (0.0, 0.0))
        yield "runai_node_cpu_requested_cores", n, cpu
        yield "runai_node_requested_memory_bytes", n, mem


def _quotas(cluster: ClusterState, cid: str) -> Iterator[Sample]:
    bp = cluster.bp
    for project in bp.projects:
        total = sum(q.gpu for q in project.quotas.values())
        yield (
            "runai_project_guaranteed_gpus",
            labels({"clusterId": cid, "project": project.name}),
            float(total),
        )
        info = {
            "clusterId": cid,
            "project": project.name,
            "department": project.department,
            "gpu_guaranteed_quota": str(total),
            "cpu_quota": "-1",
            "memory_quota": "-1",
        }
        yield "runai_project_info", labels(info), 1.0
        for pool in bp.node_pools:
            quota = bp.quota(project.name, pool.name)
            queue = {
                "clusterId": cid,
                "queue_name": project.name,
                "nodepool": pool.name,
                "department": project.department,
                "gpu_guaranteed_quota": str(quota.gpu),
                "cpu_quota": "-1",
                "memory_quota": "-1",
            }
            yield "runai_queue_info", labels(queue), 1.0
        allocated = sum(
            w.allocated_gpus()
            for w in cluster.workloads.values()
            if w.project == project.name and w.phase in ALLOCATED
        )
        p = labels({"clusterId": cid, "project": project.name})
        yield "runai_allocated_gpu_count_per_project", p, float(allocated)
        utils = [
            cluster.gpu_stats[(pod.node, g)].util_pct
            for w in cluster.workloads.values()
            if w.project == project.name and w.phase in ALLOCATED
            for pod in w.pods
            if pod.node is not None
            for g in pod.gpus
            if (pod.node, g) in cluster.gpu_stats
        ]
        if utils:
            yield "runai_gpu_utilization_per_project", p, sum(utils) / len(utils)


def _workloads(cluster: ClusterState, cid: str) -> Iterator[Sample]:
    for w in cluster.workloads.values():
        if w.phase is Phase.CREATING:
            continue
        ident = {"clusterId": cid, "workload_id": w.uid, "workload_name": w.name}
        wl = labels({**ident, "workload_type": w.workload_type, "user": w.user})
        yield (
            "runai_requested_gpus_per_workload",
            labels({**ident, "workload_type": w.workload_type, "project": w.project}),
            float(w.gpus),
        )
        yield (
            "runai_requested_gpu_memory_mb_per_workload",
            labels(
                {
                    "clusterId": cid,
                    "job_type": w.workload_type,
                    "job_uuid": w.uid,
                    "job_name": w.name,
                    "project": w.project,
                    "workload_id": w.uid,
                }
            ),
            0.0,
        )
        yield "runai_run_time_seconds_per_workload", labels(ident), w.running_seconds
        yield "runai_wait_time_seconds_per_workload", labels(ident), w.pending_seconds
        if w.phase not in ALLOCATED:
            continue
        job = labels({"clusterId": cid, "job_name": w.name, "job_uuid": w.uid})
        yield "runai_active_job_cpu_requested_cores", job, w.pods_count * w.cpu_millis_per_pod / 1000.0
        yield "runai_active_job_memory_requested_bytes", job, float(w.pods_count * w.memory_bytes_per_pod)
        yield "runai_allocated_gpu_count_per_workload", wl, float(w.allocated_gpus())
        yield from _workload_gpu_usage(cluster, w, wl, cid)


def _workload_gpu_usage(
    cluster: ClusterState, w: Workload, wl: tuple[tuple[str, str], ...], cid: str
) -> Iterator[Sample]:
    utils: list[float] = []
    used = 0.0
    last = 0.0
    for pod in w.pods:
        if pod.node is None:
            continue
        pl = {
            "clusterId": cid,
            "pod_name": pod.name,
            "pod_uuid": pod.uid,
            "pod_namespace": w.namespace,
            "node": pod.node,
        }
        yield "runai_allocated_gpu_count_per_pod", labels(pl), float(len(pod.gpus))
        yield "runai_allocated_millicpus_per_pod", labels(pl), float(w.cpu_millis_per_pod)
        yield "runai_allocated_memory_per_pod", labels(pl), float(w.memory_bytes_per_pod)
        for gpu in pod.gpus:
            stat = cluster.gpu_stats.get((pod.node, gpu))
            if stat is None:
                continue
            g = labels({**pl, "gpu": str(gpu)})
            yield "runai_gpu_utilization_per_pod_per_gpu", g, stat.util_pct
            yield "runai_gpu_memory_used_mebibytes_per_pod_per_gpu", g, stat.fb_used_mib
            utils.append(stat.util_pct)
            used += stat.fb_used_mib
            last = max(last, cluster.last_active.get((pod.node, gpu), 0.0))
    if utils:
        yield "runai_gpu_utilization_per_workload", wl, sum(utils) / len(utils)
        yield "runai_gpu_memory_used_mebibytes_per_workload", wl, used
    if last:
        yield "runai_last_gpu_utilization_time_per_workload", wl, last
        yield "runai_gpu_idle_seconds_per_workload", wl, max(0.0, cluster.now() - last)
