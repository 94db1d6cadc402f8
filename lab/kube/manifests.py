"""The Kubernetes objects of a Run:ai blueprint (pure: blueprint in, objects out).

- Node pools → kwok nodes labelled ``kai.scheduler/node-pool=<pool>`` (KAI's default node-pool label
  key, ``pkg/common/constants``), with the pool's DGX shape as capacity and allocatable.
- Departments and projects → KAI Queues (``scheduling.run.ai/v2``), one per pool they hold quota in,
  labelled with the pool: KAI's scheduler shard of a pool lists only the queues, nodes and PodGroups
  carrying its partition label (``kubernetes_lister.go``), and a Queue has one quota, so a per-pool
  quota needs a Queue per pool. Named ``<project>-<pool>`` (the lab's scheme: Run:ai's own mapping is
  PENDING in cantfind.md); a project's queue has its department's queue of that pool as parent.
- Projects → namespaces ``runai-<project>`` with ``runai/queue=<project>`` (Run:ai docs).
- Workloads → batch/v1 Jobs (one pod) or Kubeflow PyTorchJobs (distributed: a master and workers,
  which Kubeflow's training operator runs and KAI's podgrouper gangs), with KAI's queue label, the KAI
  priority class, ``schedulerName: kai-scheduler``, and kwok's stage annotations for when their pods end
  (scaled by the lab's time scale).
"""

from __future__ import annotations

from lab.blueprint.runai_blueprint import UNLIMITED, PoolQuota, RunaiBlueprint
from lab.kube.api import Obj
from lab.runai import CONTAINER, Workload
from lab.runai import namespace_of as namespace_of  # the name lab.kube's users call

NODE_POOL_LABEL = "kai.scheduler/node-pool"  # KAI DefaultNodePoolLabelKey
QUEUE_LABEL = "kai.scheduler/queue"  # KAI DefaultQueueLabel
KWOK_NODE_ANNOTATION = {
    "kwok.x-k8s.io/node": "fake"
}  # what kwok --manage-nodes-with-annotation-selector matches
GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's resource name
# kwok's own stage names at v0.7.0 (kustomize/stage/pod/general/pod-complete.yaml, pod/chaos/...).
COMPLETE = "pod-complete.stage.kwok.x-k8s.io"
FAIL = "pod-container-running-failed.stage.kwok.x-k8s.io"
DCGM_CLASS_ANNOTATION = "aifactory-lab/dcgm-class"  # lab scheme: the DCGM shim's utilisation class
IMAGE = "nvcr.io/nvidia/pytorch:24.05-py3"  # never pulled (kwok runs no containers); what a job would name
FAILED_EXIT_CODE = "1"
# The container a PyTorchJob's webhook requires (training-operator PyTorchJobDefaultContainerName).
PYTORCH_CONTAINER = "pytorch"
# PyTorchJob replica restart policy: the operator recreates a pod that exited with 128-255 (a signal:
# KAI's eviction ends a pod with SIGTERM's 143) and fails the job on 1-127 (training-operator docs,
# "ExitCode" restart policy), as a batch Job's podFailurePolicy does for the lab's single-pod workloads.
PYTORCH_RESTART_POLICY = "ExitCode"
XID_EXIT_CODE = "134"  # SIGABRT: a CUDA context lost to an XID aborts the process (lab assumption)


def queue_name(owner: str, pool: str) -> str:
    return f"{owner}-{pool}"


def project_of_namespace(bp: RunaiBlueprint, namespace: str) -> str | None:
    return next((p.name for p in bp.projects if namespace_of(p.name) == namespace), None)


def _resources(quota: PoolQuota) -> Obj:
    # GPUs are the quota; CPU and memory unlimited (-1). A 0 CPU quota would make every
    # non-preemptible workload "over quota" on CPU (KAI's NonPreemptibleOverQuota, seen in a capture).
    unlimited = {"quota": UNLIMITED, "limit": UNLIMITED, "overQuotaWeight": 1}
    return {
        "gpu": {"quota": quota.gpu, "limit": quota.limit, "overQuotaWeight": quota.over_quota_weight},
        "cpu": dict(unlimited),
        "memory": dict(unlimited),
    }


def _queue(name: str, pool: str, quota: PoolQuota, parent: str | None, display: str) -> Obj:
    spec: Obj = {"displayName": display, "resources": _resources(quota)}
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name, "labels": {NODE_POOL_LABEL: pool}},
        "spec": spec,
    }


def queues(bp: RunaiBlueprint) -> list[Obj]:
    """Departments' queues first (parents must exist for the queue controller), then projects'."""
    out = [
        _queue(queue_name(d.name, pool), pool, quota, None, d.name)
        for d in bp.departments
        for pool, quota in sorted(d.quotas.items())
    ]
    for project in bp.projects:
        department = next(d for d in bp.departments if d.name == project.department)
        for pool, quota in sorted(project.quotas.items()):
            parent = queue_name(department.name, pool) if pool in department.quotas else None
            out.append(_queue(queue_name(project.name, pool), pool, quota, parent, project.name))
    return out


def namespaces(bp: RunaiBlueprint) -> list[Obj]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace_of(p.name), "labels": {"runai/queue": p.name}},
        }
        for p in bp.projects
    ]


def nodes(bp: RunaiBlueprint) -> list[Obj]:
    out = []
    for pool in bp.node_pools:
        capacity = {
            "cpu": str(pool.cpu_cores_per_node),
            "memory": str(pool.memory_bytes_per_node),
            "pods": "110",  # the kubelet's default maxPods
            GPU_RESOURCE: str(pool.gpus_per_node),
        }
        for name in pool.node_names():
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "annotations": dict(KWOK_NODE_ANNOTATION),
                        "labels": {
                            NODE_POOL_LABEL: pool.name,
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                            "type": "kwok",
                            "nvidia.com/gpu.product": pool.model_name.replace(" ", "-"),
                            "nvidia.com/gpu.count": str(pool.gpus_per_node),
                        },
                    },
                    "status": {"capacity": capacity, "allocatable": dict(capacity)},
                }
            )
    return out


def _ms(seconds: float, time_scale: float) -> str:
    return f"{max(1, round(seconds * 1000.0 / time_scale))}ms"


def workload(bp: RunaiBlueprint, w: Workload, time_scale: float) -> Obj:
    """The object a workload is submitted as: a Job for one pod, a PyTorchJob for more."""
    return job(bp, w, time_scale) if w.pods_count == 1 else pytorch_job(bp, w, time_scale)


def _labels(w: Workload) -> dict[str, str]:
    """A workload of a pool names the project's queue there; one of none names the project, and Run:ai's
    pod-group assigner (lab/kube/nodepools.py) chooses from its priority list."""
    pool = {QUEUE_LABEL: queue_name(w.project, w.nodepool), NODE_POOL_LABEL: w.nodepool} if w.nodepool else {}
    return {
        QUEUE_LABEL: w.project,
        **pool,
        "project": w.project,
        "user": w.user,
        "runai/queue": w.project,
    }


def _pod_template(bp: RunaiBlueprint, w: Workload, time_scale: float, container: str) -> Obj:
    """One pod of ``gpus_per_pod`` GPUs, ending (kwok's stages) after the workload's run."""
    per_gpu = bp.resources_per_gpu
    run = _ms(w.run_seconds_needed, time_scale)
    # kwok waits between the delay and the jitter delay; equal, the pod ends exactly after its run.
    annotations = {DCGM_CLASS_ANNOTATION: w.dcgm_class}
    pod_labels = _labels(w)
    if w.will_fail:
        pod_labels[FAIL] = "true"
        annotations |= {
            f"{FAIL}/delay": run,
            f"{FAIL}/jitter-delay": run,
            f"{FAIL}/exit-code": FAILED_EXIT_CODE,
            f"{FAIL}/reason": "Error",
        }
    else:
        annotations |= {f"{COMPLETE}/delay": run, f"{COMPLETE}/jitter-delay": run}
    requests = {
        "cpu": f"{round(per_gpu.cpu_cores * w.gpus_per_pod * 1000)}m",
        "memory": str(per_gpu.memory_bytes * w.gpus_per_pod),
        GPU_RESOURCE: str(w.gpus_per_pod),
    }
    return {
        "metadata": {"labels": pod_labels, "annotations": annotations},
        "spec": {
            "schedulerName": bp.scheduler_name,
            "priorityClassName": w.priority_class,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": container,
                    "image": IMAGE,
                    "resources": {"requests": requests, "limits": {GPU_RESOURCE: str(w.gpus_per_pod)}},
                }
            ],
        },
    }


def job(bp: RunaiBlueprint, w: Workload, time_scale: float) -> Obj:
    """The batch/v1 Job of one workload: ``pods_count`` pods of ``gpus_per_pod`` GPUs each."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": w.name, "namespace": namespace_of(w.project), "labels": _labels(w)},
        "spec": {
            "parallelism": w.pods_count,
            "completions": w.pods_count,
            # Preempted pods are replaced (their DisruptionTarget condition: KAI's evictor with
            # --update-pod-eviction-condition); a container that exits non-zero fails the workload.
            "backoffLimit": 1000,
            "podFailurePolicy": {
                "rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                    {
                        "action": "FailJob",
                        "onExitCodes": {"containerName": CONTAINER, "operator": "NotIn", "values": [0]},
                    },
                ]
            },
            "template": _pod_template(bp, w, time_scale, CONTAINER),
        },
    }


def pytorch_job(bp: RunaiBlueprint, w: Workload, time_scale: float) -> Obj:
    """The PyTorchJob of a distributed workload: one master and ``pods_count - 1`` workers, each a pod
    of ``gpus_per_pod`` GPUs. KAI's podgrouper makes it one PodGroup with minMember = all replicas."""
    template = _pod_template(bp, w, time_scale, PYTORCH_CONTAINER)

    def replicas(count: int) -> Obj:
        return {"replicas": count, "restartPolicy": PYTORCH_RESTART_POLICY, "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": w.name, "namespace": namespace_of(w.project), "labels": _labels(w)},
        "spec": {"pytorchReplicaSpecs": {"Master": replicas(1), "Worker": replicas(w.pods_count - 1)}},
    }
