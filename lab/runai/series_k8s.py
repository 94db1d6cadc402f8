"""kube-state-metrics series the joins need, and the KAI families of one scheduler shard (pure).

kube-state-metrics: ``kube_pod_info`` (pod -> node, owner), ``kube_pod_status_phase`` (one series per
phase, 1 for the current one), ``kube_pod_container_resource_requests`` (cpu, memory, GPUs), and per
node ``kube_node_status_{capacity,allocatable,condition}``. Resource names are sanitised as
kube-state-metrics does (``nvidia.com/gpu`` -> ``nvidia_com_gpu``, unit ``integer``).

KAI (one shard per node pool, queues named after projects): scheduler families with the emulator's
own measured session latencies and counts, and queue-controller families from the blueprint quotas and
current allocation. CPU and memory quotas are unlimited (-1), as the blueprint sets no CPU quotas;
CPU and memory fair shares follow the GPU share, since pods request them per GPU.
"""

from __future__ import annotations

from collections.abc import Iterator

from lab.runai.cluster_state import ALLOCATED, CONTAINER
from lab.runai.expfmt import Sample, labels
from lab.runai.simulation import Simulation
from lab.runai.sourced_families import KAI_LATENCY_BUCKETS

POD_PHASES = ("Pending", "Succeeded", "Failed", "Unknown", "Running")
GPU_RESOURCE = "nvidia_com_gpu"


def kube_samples(sim: Simulation) -> Iterator[Sample]:
    for node in sim.nodes.values():
        for family in ("kube_node_status_capacity", "kube_node_status_allocatable"):
            gpus = node.gpus if family.endswith("capacity") else node.gpus - len(node.unhealthy)
            yield (
                family,
                labels({"node": node.name, "resource": "cpu", "unit": "core"}),
                float(node.cpu_cores),
            )
            yield (
                family,
                labels({"node": node.name, "resource": "memory", "unit": "byte"}),
                float(node.memory_bytes),
            )
            yield (
                family,
                labels({"node": node.name, "resource": GPU_RESOURCE, "unit": "integer"}),
                float(gpus),
            )
        for status in ("true", "false", "unknown"):
            yield (
                "kube_node_status_condition",
                labels({"node": node.name, "condition": "Ready", "status": status}),
                1.0 if status == "true" else 0.0,
            )
    for w in sim.workloads.values():
        for pod in w.live_pods():
            node_name = pod.node or ""
            host_ip = sim.nodes[node_name].ip if node_name else ""
            ident: dict[str, str] = {"namespace": w.namespace, "pod": pod.name, "uid": pod.uid}
            info: dict[str, str] = {
                **ident,
                "host_ip": host_ip,
                "pod_ip": pod.ip,
                "node": node_name,
                "created_by_kind": "Job",
                "created_by_name": w.name,
                "priority_class": w.priority_class,
                "host_network": "false",
            }
            yield "kube_pod_info", labels(info), 1.0
            current = pod.phase.value
            for phase in POD_PHASES:
                yield (
                    "kube_pod_status_phase",
                    labels({**ident, "phase": phase}),
                    1.0 if phase == current else 0.0,
                )
            requests = (
                ("cpu", "core", w.cpu_millis_per_pod / 1000.0),
                ("memory", "byte", float(w.memory_bytes_per_pod)),
                (GPU_RESOURCE, "integer", float(w.gpus_per_pod)),
            )
            for resource, unit, value in requests:
                yield (
                    "kube_pod_container_resource_requests",
                    labels(
                        {
                            **ident,
                            "container": CONTAINER,
                            "node": node_name,
                            "resource": resource,
                            "unit": unit,
                        }
                    ),
                    value,
                )


def kai_samples(sim: Simulation, pool: str) -> Iterator[Sample]:
    metrics = sim.shards[pool]
    yield "kai_e2e_scheduling_latency_milliseconds", (), metrics.e2e_ms
    yield "kai_open_session_latency_milliseconds", (), metrics.open_ms
    yield "kai_close_session_latency_milliseconds", (), metrics.close_ms
    for action, ms in sorted(metrics.action_ms.items()):
        yield "kai_action_scheduling_latency_milliseconds", labels({"action": action}), ms
    for family, hist in (
        ("kai_task_scheduling_latency_milliseconds", metrics.task_scheduling),
        ("kai_task_bind_latency_milliseconds", metrics.task_bind),
    ):
        counts = hist.counts or [0] * len(KAI_LATENCY_BUCKETS)
        for bound, count in zip(KAI_LATENCY_BUCKETS, counts, strict=True):
            yield f"{family}_bucket", labels({"le": bound}), float(count)
        yield f"{family}_bucket", (("le", "+Inf"),), float(hist.n)
        yield f"{family}_sum", (), hist.total
        yield f"{family}_count", (), float(hist.n)
    for family, table in (
        ("kai_podgroups_scheduled_by_action", metrics.scheduled),
        ("kai_podgroups_acted_on_by_action", metrics.acted_on),
        ("kai_scenarios_simulation_by_action", metrics.simulated),
    ):
        for action, n in sorted(table.items()):
            yield family, labels({"action": action}), float(n)
    yield "kai_total_preemption_attempts", (), float(metrics.preemption_attempts)
    for (podgroup, namespace, uid, nodepool, action), evicted in sorted(metrics.evicted_pods.items()):
        key = {
            "podgroup": podgroup,
            "namespace": namespace,
            "uid": uid,
            "nodepool": nodepool,
            "action": action,
        }
        yield "kai_pod_group_evicted_pods_total", labels(key), evicted
    for project in sim.bp.projects:
        q = labels({"queue_name": project.name})
        quota = sim.bp.quota(project.name, pool)
        allocated = [
            w
            for w in sim.workloads.values()
            if w.project == project.name and w.nodepool == pool and w.phase in ALLOCATED
        ]
        share = metrics.fair_share.get(project.name, 0.0)
        # UpdateQueueFairShare: cpu in cores, memory in GB (MemoryToGB = 1e9). Pods request CPU and
        # memory in proportion to GPUs (resources_per_gpu), so their fair shares follow the GPU share.
        per_gpu = sim.bp.resources_per_gpu
        yield "kai_queue_fair_share_gpu", q, share
        yield "kai_queue_fair_share_cpu_cores", q, share * per_gpu.cpu_cores
        yield "kai_queue_fair_share_memory_gb", q, share * per_gpu.memory_bytes / 1e9
        # UpdateQueueUsage reports the usage database; none is configured here -> 0.
        yield "kai_queue_gpu_usage", q, 0.0
        yield "kai_queue_cpu_usage", q, 0.0
        yield "kai_queue_memory_usage", q, 0.0
        yield "kai_queue_info", q, 1.0
        yield "kai_queue_deserved_gpus", q, float(quota.gpu)
        yield "kai_queue_quota_cpu_cores", q, -1.0
        yield "kai_queue_quota_memory_bytes", q, -1.0
        yield "kai_queue_allocated_gpus", q, float(sum(w.allocated_gpus() for w in allocated))
        yield (
            "kai_queue_allocated_cpu_cores",
            q,
            sum(w.pods_count * w.cpu_millis_per_pod for w in allocated) / 1000.0,
        )
        yield (
            "kai_queue_allocated_memory_bytes",
            q,
            float(sum(w.pods_count * w.memory_bytes_per_pod for w in allocated)),
        )
