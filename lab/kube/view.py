"""The Run:ai view of the real cluster: Jobs, PyTorchJobs, pods and nodes read from the API server,
turned into the construct's plain state (:mod:`lab.runai.cluster_state`) so the documented
``runai_*`` families (:mod:`lab.runai.series_runai`) are computed from what Kubernetes and KAI did.

Run:ai workload phases from the objects (Run:ai docs, workload statuses): no pod yet → Creating; pods
not bound → Pending; bound, not Running → Initializing; Running → Running; the Job's ``Complete`` or
``Failed`` condition (a PyTorchJob's ``Succeeded`` or ``Failed``, training-operator ``JobConditionType``)
→ Completed / Failed.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from lab.blueprint.runai_blueprint import PRIORITY_CLASSES, RunaiBlueprint
from lab.kube.devices import DeviceAssigner
from lab.kube.manifests import DCGM_CLASS_ANNOTATION, GPU_RESOURCE, project_of_namespace
from lab.runai import GpuStat, Node, Phase, Pod, PodPhase, Workload, nodes_of

Obj = dict[str, Any]
NON_PREEMPTIBLE_FROM = 100  # KAI: priority ≥ 100 is non-preemptible (docs/priority)
WORKLOAD_KINDS = ("Job", "PyTorchJob")  # the objects a workload is submitted as (lab.kube.manifests)
# A finished workload's condition type per kind: Completed, Failed.
_DONE = {"Job": ("Complete", "Failed"), "PyTorchJob": ("Succeeded", "Failed")}


def timestamp(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _condition(job: Obj, kind: str) -> Obj | None:
    for condition in job.get("status", {}).get("conditions", []) or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def gpus_of(pod: Obj) -> int:
    return sum(
        int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0)) for c in pod["spec"]["containers"]
    )


@dataclass
class ClusterView:
    """The :class:`lab.runai.cluster_state.ClusterState` of the real cluster, built from the API server's
    objects."""

    bp: RunaiBlueprint
    at: float
    nodes: dict[str, Node] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    gpu_stats: dict[tuple[str, int], GpuStat] = field(default_factory=dict)
    last_active: dict[tuple[str, int], float] = field(default_factory=dict)

    def now(self) -> float:
        return self.at


def build(
    bp: RunaiBlueprint,
    at: float,
    jobs: list[Obj],
    pods: list[Obj],
    devices: DeviceAssigner,
    gpu_stats: dict[tuple[str, int], GpuStat],
    last_active: dict[tuple[str, int], float],
) -> ClusterView:
    view = ClusterView(bp, at, gpu_stats=gpu_stats, last_active=last_active)
    view.nodes = nodes_of(bp)
    for name, node in view.nodes.items():
        for gpu, holder in devices.holders.get(name, {}).items():
            node.holders[gpu] = (holder.namespace, holder.name)
        node.unhealthy = set(devices.unhealthy.get(name, set()))
    pods_by_job: dict[str, list[Obj]] = {}
    for pod in pods:
        if (owner := workload_owner(pod)) is not None:
            pods_by_job.setdefault(owner["uid"], []).append(pod)
    held = devices.held()
    for job in jobs:
        workload = _workload(bp, job, pods_by_job.get(job["metadata"]["uid"], []), held, at)
        view.workloads[workload.uid] = workload
    return view


def workload_owner(pod: Obj) -> Obj | None:
    """The owner reference of the Job or PyTorchJob a pod belongs to, if any."""
    owners = pod["metadata"].get("ownerReferences", []) or []
    return next((o for o in owners if o.get("kind") in WORKLOAD_KINDS), None)


def _kind(job: Obj) -> str:
    """Job or PyTorchJob (the items of a list carry no ``kind``)."""
    return "PyTorchJob" if "pytorchReplicaSpecs" in job["spec"] else "Job"


def _shape(job: Obj) -> tuple[Obj, int]:
    """A workload object's pod template and number of pods (a PyTorchJob's: all replicas)."""
    if _kind(job) == "PyTorchJob":
        specs = job["spec"]["pytorchReplicaSpecs"]
        return specs["Master"]["template"], sum(int(r.get("replicas", 1)) for r in specs.values())
    return job["spec"]["template"], int(job["spec"].get("parallelism", 1))


def _workload(
    bp: RunaiBlueprint, job: Obj, pods: list[Obj], held: dict[str, list[tuple[str, int]]], at: float
) -> Workload:
    meta = job["metadata"]
    template, pods_count = _shape(job)
    labels = meta.get("labels", {})
    pod_spec = template["spec"]
    container = pod_spec["containers"][0]
    requests = container.get("resources", {}).get("requests", {})
    priority_class = pod_spec.get("priorityClassName", "")
    priority = PRIORITY_CLASSES.get(priority_class, 0)
    # A user's workload may carry only its queue label: its project is its namespace's.
    project = labels.get("project") or project_of_namespace(bp, meta.get("namespace", "")) or ""
    created = timestamp(meta.get("creationTimestamp")) or at
    workload = Workload(
        uid=meta["uid"],
        name=meta["name"],
        project=project,
        department=bp.project(project).department if project else "",
        user=labels.get("user", ""),
        workload_class="",
        workload_type=_workload_type(bp, template),
        dcgm_class=template["metadata"].get("annotations", {}).get(DCGM_CLASS_ANNOTATION, "training"),
        priority_class=priority_class,
        priority=priority,
        preemptible=priority < NON_PREEMPTIBLE_FROM,
        nodepool=labels.get("kai.scheduler/node-pool", ""),
        pods_count=pods_count,
        gpus_per_pod=int(container.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0)),
        cpu_millis_per_pod=round(quantity(requests.get("cpu", "0")) * 1000),
        memory_bytes_per_pod=round(quantity(requests.get("memory", "0"))),
        submitted_at=created,
        run_seconds_needed=0.0,
        will_fail=False,
    )
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    started = [timestamp(p.get("status", {}).get("startTime")) for p in pods]
    first_start = min((s for s in started if s), default=None)
    for pod in sorted(live, key=lambda p: p["metadata"]["name"]):
        phase = PodPhase(pod.get("status", {}).get("phase", "Pending"))
        gpus = held.get(pod["metadata"]["uid"], [])
        workload.pods.append(
            Pod(
                pod["metadata"]["name"],
                pod["metadata"]["uid"],
                timestamp(pod["metadata"].get("creationTimestamp")) or at,
                phase,
                pod["spec"].get("nodeName"),
                tuple(g for _, g in gpus),
                pod.get("status", {}).get("podIP", ""),
            )
        )
    if not workload.nodepool:  # a user's workload that named none: where a pod of it is bound
        bound = {p.node for p in workload.pods if p.node}
        workload.nodepool = next((pool.name for pool in bp.node_pools if bound & set(pool.node_names())), "")
    done, failed = _DONE[_kind(job)]
    finished = _condition(job, done) or _condition(job, failed)
    end = timestamp(finished.get("lastTransitionTime")) if finished else None
    if _condition(job, done):
        workload.phase = Phase.COMPLETED
    elif _condition(job, failed):
        workload.phase = Phase.FAILED
    elif any(p.phase is PodPhase.RUNNING for p in workload.pods):
        workload.phase = Phase.RUNNING
    elif any(p.node for p in workload.pods):
        workload.phase = Phase.INITIALIZING
    elif workload.pods:
        workload.phase = Phase.PENDING
    else:
        workload.phase = Phase.CREATING
    workload.finished_at = end
    stop = end or at
    workload.pending_seconds = max(0.0, (first_start or stop) - created)
    workload.running_seconds = max(0.0, stop - first_start) if first_start else 0.0
    return workload


def _workload_type(bp: RunaiBlueprint, template: Obj) -> str:
    """The Run:ai workload type: the DCGM class the Job carries (the blueprint's classes pair them)."""
    dcgm = template["metadata"].get("annotations", {}).get(DCGM_CLASS_ANNOTATION, "training")
    return str(dcgm) if dcgm in ("training", "interactive", "inference") else "training"


_SUFFIXES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
}


def quantity(text: str) -> float:
    """A Kubernetes resource quantity (``250G``, ``14``, ``500m``, ``2Ti``, ``1e3``) as a number."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)]:
            return float(text[: -len(suffix)]) * _SUFFIXES[suffix]
    return float(text)
