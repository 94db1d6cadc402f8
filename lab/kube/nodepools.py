"""Node pools for workloads that name none: what Run:ai's pod-group assigner does, emulated.

KAI v0.13.0 runs one scheduler shard per node pool, and a shard lists only the PodGroups carrying its
pool's label (``pkg/scheduler/cache/cluster_info/data_lister/kubernetes_lister.go``): a PodGroup
without ``kai.scheduler/node-pool`` is no shard's and stays Pending without a word. KAI's podgrouper
keeps a PodGroup's queue and node-pool label as it finds them, "the fields that the
pod-group-assigner is responsible for" (``pkg/podgrouper/podgroup/handler.go``, ``ignoreFields``):
in Run:ai that assigner, which is not open source, fills them in. Run:ai's docs (Projects → Node
pools) say what it does: a workload that names no node pool uses its project's default node-pool
priority list, tried first pool first.

The lab does that here, and nothing more: a PodGroup of a project's namespace that has no pool gets
the first pool of the project's list (:meth:`RunaiBlueprint.node_pool_priority`) where its gang's
GPUs are free now, else the list's first pool, where it waits; its queue becomes the project's queue
of that pool (KAI's own ``<project>-<pool>`` naming, ``defaultgrouper.calculateQueueName``). A queue
label that names a pool's queue of the project keeps that pool. A PodGroup the lab cannot place gets
a Warning event saying why, never silence. Moving a waiting gang on to the list's next pool later,
as Run:ai's scheduler may, is not emulated (cantfind.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.blueprint.runai_blueprint import RunaiBlueprint
from lab.kube.manifests import NODE_POOL_LABEL, QUEUE_LABEL, namespace_of, project_of_namespace, queue_name
from lab.kube.view import gpus_of

Obj = dict[str, Any]
POD_GROUP_ANNOTATION = "pod-group-name"  # KAI constants.PodGroupAnnotationForPod, on each pod
KAI_DEFAULT_QUEUE = "default-queue"  # KAI podgrouper constants.DefaultQueueName: no queue, no project
ASSIGNER = "pod-group-assigner"  # the component KAI's podgrouper names as the owner of these fields
# KAI's PodGroup event reason for a gang no shard can place (pkg/scheduler/api/unschedule_info.go).
UNSCHEDULABLE = "Unschedulable"
# A PodGroup is created when its first pod is seen, its pods are annotated right after: a gang's GPUs
# are counted once its pods carry the annotation, or after this long with what is seen.
PODS_GRACE_S = 10.0


@dataclass(frozen=True)
class Assignment:
    pool: str
    queue: str
    why: str


@dataclass(frozen=True)
class Stranded:
    reason: str


def decide(
    bp: RunaiBlueprint, pod_group: Obj, gang_gpus: int, free_gpus: dict[str, int]
) -> Assignment | Stranded:
    """Where a PodGroup without a node pool goes (it has none: the caller checked)."""
    meta = pod_group["metadata"]
    namespace = meta["namespace"]
    project = project_of_namespace(bp, namespace)
    if project is None:
        projects = ", ".join(namespace_of(p.name) for p in bp.projects)
        return Stranded(
            f"namespace {namespace} is no project's, so no node pool can be chosen for it: submit to a "
            f"project namespace ({projects}) or label the workload {NODE_POOL_LABEL}=<pool>"
        )
    pools = bp.node_pool_priority(project)
    queue = str(pod_group.get("spec", {}).get("queue", ""))
    named = {queue_name(project, pool): pool for pool in bp.project(project).quotas}
    if queue in named:
        return Assignment(named[queue], queue, f"its queue {queue} is project {project}'s in that pool")
    if queue not in ("", project, KAI_DEFAULT_QUEUE):
        return Stranded(
            f"queue {queue} is not one of project {project}'s ({', '.join(sorted(named))}); label the "
            f"workload {QUEUE_LABEL}=<one of them> or {QUEUE_LABEL}={project} to use the project's "
            f"node-pool priority list ({', '.join(pools)})"
        )
    fits = next((pool for pool in pools if free_gpus.get(pool, 0) >= gang_gpus), None)
    pool = fits or pools[0]
    why = (
        f"first pool of project {project}'s priority list ({', '.join(pools)}) with {gang_gpus} GPUs free"
        if fits
        else f"no pool of project {project}'s priority list ({', '.join(pools)}) has {gang_gpus} GPUs "
        f"free; it waits in the first"
    )
    return Assignment(pool, queue_name(project, pool), why)


def patch(assignment: Assignment) -> Obj:
    """The merge patch that puts a PodGroup in its pool and queue (what the scheduler shards read)."""
    labels = {NODE_POOL_LABEL: assignment.pool, QUEUE_LABEL: assignment.queue}
    return {"metadata": {"labels": labels}, "spec": {"queue": assignment.queue}}


def event(pod_group: Obj, stranded: Stranded, now_iso: str) -> Obj:
    """A Warning event on the PodGroup: ``kubectl describe`` and the lab's events say why it waits."""
    meta = pod_group["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": pod_group.get("apiVersion", "scheduling.run.ai/v2alpha2"),
            "kind": "PodGroup",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": "Warning",
        "reason": UNSCHEDULABLE,
        "message": stranded.reason,
        "source": {"component": ASSIGNER},
        "reportingComponent": ASSIGNER,
        "firstTimestamp": now_iso,
        "lastTimestamp": now_iso,
        "count": 1,
    }


def gang_gpus(pod_group: Obj, pods: list[Obj]) -> tuple[int, int]:
    """The GPUs the PodGroup's pods request, and how many of its pods were seen."""
    name = pod_group["metadata"]["name"]
    namespace = pod_group["metadata"]["namespace"]
    mine = [
        p
        for p in pods
        if p["metadata"].get("namespace") == namespace
        and (p["metadata"].get("annotations") or {}).get(POD_GROUP_ANNOTATION) == name
    ]
    return sum(gpus_of(p) for p in mine), len(mine)


def free_gpus_by_pool(bp: RunaiBlueprint, pods: list[Obj]) -> dict[str, int]:
    """GPUs no live bound pod requests, per pool."""
    pool_of = {node: pool.name for pool in bp.node_pools for node in pool.node_names()}
    free = {pool.name: pool.nodes * pool.gpus_per_node for pool in bp.node_pools}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node not in pool_of or pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            continue
        free[pool_of[node]] -= gpus_of(pod)
    return free
