"""The scripted part of the Run:ai lab's failure modes, played by the driver at every tick.

The numbers live in the blueprint's ``scenarios``. What a scenario does to the cluster is what users
would: submit workloads (the preemption storm's borrowers as gangs, its claimants as single pods) or,
for the GPU fault, what a failing GPU does to its pod (an XID in the DCGM shim, the device plugin's
health check, the container's exit as the kubelet reports it).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lab.blueprint.runai_blueprint import RunaiBlueprint, WorkloadClass
from lab.kube import manifests, view
from lab.kube.api import Client
from lab.kube.devices import DeviceAssigner
from lab.paths import atomic_write
from lab.runai import Arrivals, DcgmBridge, Workload, poisson

LONG_RUN_S = 30 * 86400.0  # scripted borrowers and victims run for the whole scenario
Obj = dict[str, Any]


class Cluster(Protocol):
    """What a scenario reaches of the driver: the blueprint, the API, the devices, the DCGM shim."""

    bp: RunaiBlueprint
    client: Client
    out: Path
    rng: random.Random
    arrivals: Arrivals
    devices: DeviceAssigner
    dcgm: DcgmBridge | None

    def submit(self, workload: Workload) -> None: ...


@dataclass
class Fault:
    workload: str
    workload_uid: str
    namespace: str
    pod: str
    pod_uid: str
    node: str
    gpu: int
    xid: int
    at: float


@dataclass
class Scenario:
    """A scenario's progress (its numbers live in the blueprint's ``scenarios``)."""

    name: str
    filled_at: float | None = None  # preemption-storm: blueprint time of the borrowers' submission
    burst: bool = False
    victim: str | None = None  # gpu-fault: the victim Job's name
    fault: Fault | None = None


def play(cluster: Cluster, s: Scenario, t: float, dt: float, pods: list[Obj]) -> None:
    """One tick of scenario ``s`` at blueprint time ``t`` (``dt`` since the last tick)."""
    bp = cluster.bp
    if s.name == "quota-exhaustion":
        spec = bp.scenarios.quota_exhaustion
        if t >= spec.start_s:
            wclass = bp.workload_class(spec.workload_class)
            for _ in range(poisson(cluster.rng, spec.rate_per_hour * dt / 3600.0)):
                cluster.submit(cluster.arrivals.make(wclass, t, project=spec.project))
    elif s.name == "preemption-storm":
        storm = bp.scenarios.preemption_storm
        if s.filled_at is None and t >= storm.fill_at_s:
            s.filled_at = t
            _borrow_free_gpus(cluster, bp.workload_class(storm.borrower_class), storm.borrower, t, pods)
        # The blueprint's gap after the fill, even when the driver's first look came after both times
        # (a slow start): the borrowers must be running before the claim.
        gap = storm.burst_at_s - storm.fill_at_s
        if not s.burst and s.filled_at is not None and t >= max(storm.burst_at_s, s.filled_at + gap):
            s.burst = True
            for workload in claim(bp, cluster.arrivals, t):
                cluster.submit(workload)
    elif s.name == "gpu-fault":
        _gpu_fault(cluster, s, t, pods)


def claim(bp: RunaiBlueprint, arrivals: Arrivals, t: float) -> list[Workload]:
    """The storm's claim: the claimant's whole quota in the pool as single-GPU workloads of its class,
    running for the whole scenario."""
    storm = bp.scenarios.preemption_storm
    wclass = bp.workload_class(storm.claimant_class)
    return [
        _long_run(arrivals, wclass, storm.claimant, t, 1)
        for _ in range(bp.quota(storm.claimant, bp.scenario_pool(wclass)).gpu)
    ]


def _long_run(
    arrivals: Arrivals, wclass: WorkloadClass, project: str, t: float, gpus_per_pod: int
) -> Workload:
    return arrivals.make(
        wclass, t, project=project, gpus_per_pod=gpus_per_pod, run_seconds=LONG_RUN_S, will_fail=False
    )


def gang_sizes(replicas: int, pods: int) -> list[int]:
    """``replicas`` pods split into gangs of the class's ``pods``, the rest in one smaller gang; a rest of
    one replica takes one from the last whole gang, so that every gang is a gang (one replica alone,
    with nothing else to split, is a single-pod workload)."""
    whole, rest = divmod(replicas, pods)
    sizes = [pods] * whole + ([rest] if rest else [])
    if rest == 1 and whole and pods > 2:
        sizes[-2:] = [pods - 1, 2]
    return sizes


def _borrow_free_gpus(
    cluster: Cluster, wclass: WorkloadClass, project: str, t: float, pods: list[Obj]
) -> None:
    """The borrower takes the pool's free GPUs with workloads of its class's shape: a distributed class
    as gangs of its ``pods`` replicas of its usual ``gpus_per_pod``, as many as the free GPUs hold. Free:
    on no bound pod, and not asked for by a pod of the pool still waiting for KAI (an arrival just
    submitted would otherwise split a node a replica needs whole)."""
    per_pod = max(wclass.gpus_per_pod, key=lambda gpus: (wclass.gpus_per_pod[gpus], gpus))
    pool = cluster.bp.scenario_pool(wclass)
    nodes = cluster.bp.pool(pool).node_names()
    waiting = sum(
        view.gpus_of(p)
        for p in pods
        if not p["spec"].get("nodeName")
        and p.get("status", {}).get("phase", "Pending") == "Pending"
        and p["metadata"].get("labels", {}).get(manifests.NODE_POOL_LABEL) == pool
    )
    free = [len(cluster.devices.free(n)) for n in nodes]
    replicas = min(sum(f // per_pod for f in free), (sum(free) - waiting) // per_pod)
    for size in gang_sizes(max(0, replicas), wclass.pods):
        workload = _long_run(cluster.arrivals, wclass, project, t, per_pod)
        workload.pods_count = size  # one replica alone is a single-pod Job (manifests.workload)
        cluster.submit(workload)


def _gpu_fault(cluster: Cluster, s: Scenario, t: float, pods: list[Obj]) -> None:
    spec = cluster.bp.scenarios.gpu_fault
    wclass = cluster.bp.workload_class(spec.workload_class)
    if s.victim is None:
        victim = cluster.arrivals.make(
            wclass, t, project=wclass.projects[0], run_seconds=LONG_RUN_S, will_fail=False
        )
        s.victim = victim.name
        cluster.submit(victim)
    if s.fault is not None or t < spec.at_s:
        return
    for pod in pods:
        meta = pod["metadata"]
        if not meta["name"].startswith(f"{s.victim}-") or pod.get("status", {}).get("phase") != "Running":
            continue
        held = cluster.devices.gpus_of(meta["uid"])
        if not held:
            continue
        node, gpu = held[0]
        assert cluster.dcgm is not None
        cluster.dcgm.inject_xid(node, gpu, spec.xid)  # what the shim's XID field then reports
        cluster.devices.mark_unhealthy(node, gpu)  # the device plugin's health check
        fail_container(cluster.client, pod, f"XID {spec.xid} on GPU {gpu}: the CUDA context is lost")
        owner = view.workload_owner(pod)
        assert owner is not None  # the victim's pod, of the Job the driver submitted
        s.fault = Fault(
            s.victim,
            owner["uid"],
            meta["namespace"],
            meta["name"],
            meta["uid"],
            node,
            gpu,
            spec.xid,
            time.time(),
        )
        atomic_write(cluster.out / "fault.json", json.dumps(s.fault.__dict__, indent=1) + "\n", mode=0o644)
        return


def fail_container(client: Client, pod: Obj, message: str) -> None:
    """The pod's container exits as a CUDA process does when an XID kills its context, written
    as the kubelet reports it. kwok does not re-stage a pod whose next stage is already due (its
    completion), so the driver writes this one status as the node's kubelet would."""
    meta, now = pod["metadata"], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started = pod.get("status", {}).get("startTime", now)
    statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {
                "terminated": {
                    "exitCode": int(manifests.XID_EXIT_CODE),
                    "reason": "Error",
                    "message": message,
                    "startedAt": started,
                    "finishedAt": now,
                }
            },
        }
        for c in pod["spec"]["containers"]
    ]
    conditions = [
        {"type": t, "status": "False", "lastTransitionTime": now, "reason": "PodFailed"}
        for t in ("Ready", "ContainersReady")
    ]
    client.strategic_patch(
        "Pod",
        meta["namespace"],
        meta["name"],
        {"status": {"phase": "Failed", "containerStatuses": statuses, "conditions": conditions}},
        status=True,
    )
