"""A small Run:ai cluster as the API server shows it, and the driver's look at it each tick.

Jobs are the driver's own (:func:`lab.kube.manifests.job`) with what the API server adds; pods are what
the Job controller makes of their template, bound by KAI and run by kwok. The victim's names and uids are
those of the gpu-fault run in ``captures/runai-kai-0.13.0/gpu-fault/``, so kube-state-metrics' captured
series of that pod join the series computed here.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from pathlib import Path

from lab.blueprint.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, load
from lab.kube import manifests, view
from lab.kube.api import Obj
from lab.kube.devices import DeviceAssigner
from lab.kube.driver import bound_pods
from lab.runai import Arrivals, DcgmBridge

BP = load(DEFAULT_RUNAI_BLUEPRINT)
TIME_SCALE = 20.0  # the gpu-fault run's
CREATED = "2026-12-02T11:49:10Z"  # the captured victim's kube_pod_created
STARTED = "2026-12-02T11:49:19Z"  # its kube_pod_start_time
AT = 1796212187.0  # a look 28 s into its run
VICTIM = "train-00001"
VICTIM_UID = "381638e1-aece-457f-8cef-e1ee5525fbdd"  # the captured workload_id
VICTIM_POD = "train-00001-ftgr7"
VICTIM_POD_UID = "ac79a78c-aabc-47c2-acdd-4049a94b644a"
NODE = "dgx-001"
WAITING = "train-00002"


def submitted(job: Obj, uid: str) -> Obj:
    """The Job as the API server stores it: a uid, a creation time, an empty status."""
    job["metadata"] |= {"uid": uid, "creationTimestamp": CREATED}
    job["status"] = {}
    return job


def pod_of(job: Obj, name: str, uid: str, node: str | None = None) -> Obj:
    """The Job controller's pod of the Job's template; bound to ``node`` (KAI) and Running (kwok)."""
    meta, template = job["metadata"], job["spec"]["template"]
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"]}
    pod: Obj = {
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "uid": uid,
            "creationTimestamp": CREATED,
            "labels": dict(template["metadata"]["labels"]),
            "annotations": dict(template["metadata"]["annotations"]),
            "ownerReferences": [owner | {"controller": True, "blockOwnerDeletion": True}],
        },
        "spec": copy.deepcopy(template["spec"]),
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": STARTED, "podIP": "10.0.0.1"}
    return pod


@dataclass
class Cluster:
    """The objects of one moment, the devices the driver assigned and the DCGM targets it serves."""

    jobs: list[Obj]
    pods: list[Obj]
    devices: DeviceAssigner
    dcgm: DcgmBridge
    last_active: dict[tuple[str, int], float] = field(default_factory=dict)

    def look(self) -> view.ClusterView:
        """What one tick of the driver sees: devices assigned, GPUs read, the view built."""
        if self.devices.assign(bound_pods(self.pods)):
            self.dcgm.write(self.devices.mapping())
        stats = self.dcgm.gpu_stats()
        self.last_active |= {key: AT for key, stat in stats.items() if stat.util_pct > 0}
        return view.build(BP, AT, self.jobs, self.pods, self.devices, stats, self.last_active)

    def fail_on_xid(self, pod_name: str, xid: int) -> tuple[str, int]:
        """The gpu-fault scenario on the pod's first GPU, as the driver plays it: the XID in the shim,
        the GPU unhealthy, the pod Failed; then the Job controller fails the Job."""
        pod = next(p for p in self.pods if p["metadata"]["name"] == pod_name)
        node, gpu = self.devices.gpus_of(pod["metadata"]["uid"])[0]
        self.dcgm.inject_xid(node, gpu, xid)
        self.devices.mark_unhealthy(node, gpu)
        pod["status"]["phase"] = "Failed"
        owner = pod["metadata"]["ownerReferences"][0]["uid"]
        job = next(j for j in self.jobs if j["metadata"]["uid"] == owner)
        failed = {"type": "Failed", "status": "True", "lastTransitionTime": "2026-12-02T11:49:47Z"}
        job["status"] = {"conditions": [failed]}
        return node, gpu


def busy(out: Path) -> Cluster:
    """The victim running on one GPU of dgx-001, and a second workload Pending in another project."""
    arrivals = Arrivals(BP, random.Random(0))
    train = BP.workload_class("train")
    victim = arrivals.make(train, 0.0, project="team-a", gpus_per_pod=1, run_seconds=3600.0, will_fail=False)
    waiting = arrivals.make(train, 0.0, project="team-b", gpus_per_pod=8, will_fail=False)
    assert (victim.name, waiting.name) == (VICTIM, WAITING)
    victim_job = submitted(manifests.job(BP, victim, TIME_SCALE), VICTIM_UID)
    waiting_job = submitted(manifests.job(BP, waiting, TIME_SCALE), "5d1f7c2e-0b7a-4c52-9d3e-8a61f0c4b912")
    pods = [
        pod_of(victim_job, VICTIM_POD, VICTIM_POD_UID, NODE),
        pod_of(waiting_job, f"{waiting.name}-x7k2q", "0e6b9c1d-3f84-4a27-b5d0-c2e9a7f31a68"),
    ]
    nodes = [(n, pool.gpus_per_node, pool.model_name) for pool in BP.node_pools for n in pool.node_names()]
    # The driver's clock: blueprint seconds since it started (28 wall seconds at the time scale).
    dcgm = DcgmBridge(nodes, out, seed=0, clock=lambda: 28.0 * TIME_SCALE)
    return Cluster([victim_job, waiting_job], pods, DeviceAssigner({n: g for n, g, _ in nodes}), dcgm)
