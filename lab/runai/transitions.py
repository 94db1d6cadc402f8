"""What a session's decisions do to the cluster: binds, evictions, unschedulable reports, events.

Event texts are KAI v0.13.0's (``default_status_updater.go``, ``unschedule_info.go``,
``bindrequest_controller.go``) and the kubelet's; sources in :data:`lab.runai.k8s_events.EVENT_SOURCES`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lab.runai import k8s_events
from lab.runai.cluster_state import CONTAINER, Phase, Pod, PodPhase, Workload
from lab.runai.k8s_events import ObjectRef
from lab.runai.session_types import SessionResult

if TYPE_CHECKING:
    from lab.runai.simulation import Simulation


def whole_ms(seconds: float) -> float:
    """Go ``Duration.Milliseconds()``: whole milliseconds, truncated."""
    return float(int(seconds * 1000))


def apply_session(sim: Simulation, pool: str, result: SessionResult) -> None:
    """Bind, evict and report unschedulable work as one session decided, with the events."""
    metrics = sim.shards[pool]
    for eviction in result.evictions:
        evict(sim, pool, eviction.victim.uid, eviction.action, sim.workloads[eviction.preemptor.uid])
    for uid, placement in result.binds.items():
        begin = time.perf_counter()
        w = sim.workloads[uid]
        for pod, (node_name, gpus) in zip(
            sorted(w.live_pods(), key=lambda p: p.rank), placement, strict=True
        ):
            node = sim.nodes[node_name]
            pod.node, pod.gpus = node_name, gpus
            pod.ip = f"10.244.{list(sim.nodes).index(node_name)}.{(sim.created_pods % 250) + 2}"
            for gpu in gpus:
                node.holders[gpu] = (w.namespace, pod.name)
            ref = pod_ref(w, pod)
            sim.events.record(
                ref,
                "Normal",
                "Scheduled",
                f"Successfully assigned pod {w.namespace}/{pod.name} to node {node_name} at node-pool {pool}",
                sim.bp.scheduler_name,
            )
            sim.events.record(ref, "Normal", "Bound", f"Pod bound successfully to node {node_name}", "binder")
            metrics.task_bind.observe(whole_ms(time.perf_counter() - begin))
        metrics.task_scheduling.observe(metrics.action_ms.get("allocate", 0.0))
        sim.set_phase(w, Phase.INITIALIZING)
    preemptors = {e.preemptor.uid for e in result.evictions}
    for uid, verdict in result.unschedulable.items():
        w = sim.workloads[uid]
        if uid in result.binds or uid in preemptors or w.phase is not Phase.PENDING:
            continue
        message = f"{verdict.reason}: {verdict.message}\n" if verdict.reason else verdict.message
        for pod in w.live_pods():
            sim.events.record(pod_ref(w, pod), "Warning", "Unschedulable", message, sim.bp.scheduler_name)
        group_message = message if verdict.reason else "Unable to schedule podgroup"
        sim.events.record(podgroup_ref(w), "Normal", "Unschedulable", group_message, sim.bp.scheduler_name)


def evict(sim: Simulation, pool: str, uid: str, action: str, preemptor: Workload) -> None:
    """KAI evicts every pod of the victim (Evict on its PodGroup, kubelet Killing), the controller
    recreates them, the workload is Pending again."""
    w = sim.workloads[uid]
    pods = w.live_pods()
    metrics = sim.shards[pool]
    for pod in pods:
        if action == "reclaim":
            message = (
                f"Pod {w.namespace}/{pod.name} was preempted by workload "
                f"{preemptor.namespace}/{preemptor.podgroup}."
            )
        else:
            message = (
                f"Pod {w.namespace}/{pod.name} was preempted by higher priority workload "
                f"{preemptor.namespace}/{preemptor.podgroup}"
            )
        annotations = {
            k8s_events.NUM_EVICTED_PODS: str(len(pods)),
            k8s_events.EVICTOR_ACTION_TYPE: action,
            k8s_events.EVICTOR_PODGROUP_NAME: preemptor.podgroup,
            k8s_events.EVICTOR_PODGROUP_NAMESPACE: preemptor.namespace,
        }
        sim.events.record(
            podgroup_ref(w),
            "Normal",
            "Evict",
            message,
            sim.bp.scheduler_name,
            annotations=annotations,
        )
        # v0.13.0 adds the gang size per evicted pod (inflation fixed after the tag, PR #1622).
        key = (w.podgroup, w.namespace, w.podgroup_uid, pool, action)
        metrics.evicted_pods[key] = metrics.evicted_pods.get(key, 0.0) + len(pods)
        if pod.phase is PodPhase.RUNNING and pod.node is not None:
            sim.events.record(
                pod_ref(w, pod, container=True),
                "Normal",
                "Killing",
                f"Stopping container {CONTAINER}",
                "kubelet",
                pod.node,
            )
        sim.release(w, pod)
        pod.deleted_at = sim.t
        sim.deleted_pods += 1
    w.evictions += 1
    w.phase_reason = "Preempted"
    sim.create_pods(w)
    sim.set_phase(w, Phase.PENDING)


def pod_ref(w: Workload, pod: Pod, container: bool = False) -> ObjectRef:
    return ObjectRef(
        "Pod",
        w.namespace,
        pod.name,
        pod.uid,
        k8s_events.POD_API,
        f"spec.containers{{{CONTAINER}}}" if container else "",
    )


def podgroup_ref(w: Workload) -> ObjectRef:
    return ObjectRef("PodGroup", w.namespace, w.podgroup, w.podgroup_uid, k8s_events.PODGROUP_API)
