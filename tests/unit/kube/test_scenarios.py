"""The scripted part of the Run:ai scenarios: what the preemption storm submits, and when."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from lab.blueprint.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, RunaiBlueprint, load
from lab.kube import manifests, scenarios
from lab.kube.api import Client
from lab.kube.devices import BoundPod, DeviceAssigner
from lab.runai.arrivals import Arrivals
from lab.runai.cluster_state import Workload
from lab.runai.dcgm_bridge import DcgmBridge

BP = load(DEFAULT_RUNAI_BLUEPRINT)


@dataclass
class Submitting:
    """The driver as a scenario sees it, keeping what it submits instead of creating it."""

    bp: RunaiBlueprint
    out: Path
    client: Client = field(init=False)
    dcgm: DcgmBridge | None = None
    submitted: list[Workload] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(0)
        self.arrivals = Arrivals(self.bp, random.Random(1))
        self.devices = DeviceAssigner(
            {n: p.gpus_per_node for p in self.bp.node_pools for n in p.node_names()}
        )

    def submit(self, workload: Workload) -> None:
        self.submitted.append(workload)


def test_gangs_take_the_class_size_and_the_rest_goes_in_one_smaller_gang() -> None:
    assert scenarios.gang_sizes(6, 4) == [4, 2]
    assert scenarios.gang_sizes(8, 4) == [4, 4]
    assert scenarios.gang_sizes(5, 4) == [3, 2]  # no gang of one replica
    assert scenarios.gang_sizes(1, 4) == [1]
    assert scenarios.gang_sizes(0, 4) == []


def test_the_storm_borrows_an_empty_pool_with_gangs_of_the_distributed_class(tmp_path: Path) -> None:
    cluster = Submitting(BP, tmp_path)
    storm, state = BP.scenarios.preemption_storm, scenarios.Scenario("preemption-storm")
    scenarios.play(cluster, state, storm.fill_at_s - 1, 1.0, [])
    assert not cluster.submitted
    scenarios.play(cluster, state, storm.fill_at_s, 1.0, [])
    objects = [manifests.workload(BP, w, 60.0) for w in cluster.submitted]
    # Pool default's 6 DGX nodes: one gang of the dist class's 4 replicas and one of 2, 8 GPUs each.
    assert [
        (o["kind"], w.pods_count, w.gpus_per_pod) for o, w in zip(objects, cluster.submitted, strict=True)
    ] == [
        ("PyTorchJob", 4, 8),
        ("PyTorchJob", 2, 8),
    ]
    assert {(w.project, w.run_seconds_needed, w.will_fail) for w in cluster.submitted} == {
        ("team-a", scenarios.LONG_RUN_S, False)
    }
    scenarios.play(cluster, state, storm.fill_at_s + 1, 1.0, [])
    assert len(cluster.submitted) == 2  # the pool is filled once


def test_a_node_with_a_gpu_taken_holds_no_replica(tmp_path: Path) -> None:
    cluster = Submitting(BP, tmp_path)
    cluster.devices.assign([BoundPod("u1", "runai-team-b", "train-x", "dgx-001", 1, "main", "training", "x")])
    scenarios.play(
        cluster, scenarios.Scenario("preemption-storm"), BP.scenarios.preemption_storm.fill_at_s, 1, []
    )
    assert [w.pods_count for w in cluster.submitted] == [3, 2]


def test_gpus_asked_for_by_pods_not_yet_bound_are_not_borrowed(tmp_path: Path) -> None:
    cluster = Submitting(BP, tmp_path)
    arrival = manifests.workload(
        BP, Arrivals(BP, random.Random(2)).make(BP.workload_class("train"), 0.0, gpus_per_pod=2), 60.0
    )
    pending = {
        "metadata": dict(arrival["spec"]["template"]["metadata"]),
        "spec": arrival["spec"]["template"]["spec"],
    }
    scenarios.play(
        cluster, scenarios.Scenario("preemption-storm"), BP.scenarios.preemption_storm.fill_at_s, 1, [pending]
    )
    assert [w.pods_count for w in cluster.submitted] == [3, 2]  # 46 GPUs: five replicas of 8


def test_the_claimant_submits_its_whole_quota_of_one_gpu_workloads_at_the_burst(tmp_path: Path) -> None:
    cluster = Submitting(BP, tmp_path)
    storm = BP.scenarios.preemption_storm
    state = scenarios.Scenario("preemption-storm", filled_at=storm.fill_at_s)
    scenarios.play(cluster, state, storm.burst_at_s, 1.0, [])
    quota = BP.quota(storm.claimant, BP.workload_class(storm.claimant_class).nodepool).gpu
    assert len(cluster.submitted) == quota == 16
    assert {(w.project, w.pods_count, w.gpus_per_pod) for w in cluster.submitted} == {("team-b", 1, 1)}


def test_after_a_slow_start_the_claim_still_comes_the_blueprints_gap_after_the_fill(tmp_path: Path) -> None:
    """A driver whose first look is past both times fills first and claims one gap later."""
    cluster = Submitting(BP, tmp_path)
    storm, state = BP.scenarios.preemption_storm, scenarios.Scenario("preemption-storm")
    late = storm.burst_at_s + 300
    scenarios.play(cluster, state, late, 1.0, [])
    assert {w.project for w in cluster.submitted} == {"team-a"}
    scenarios.play(cluster, state, late + storm.burst_at_s - storm.fill_at_s - 1, 1.0, [])
    assert {w.project for w in cluster.submitted} == {"team-a"}
    scenarios.play(cluster, state, late + storm.burst_at_s - storm.fill_at_s, 1.0, [])
    assert sum(w.project == "team-b" for w in cluster.submitted) == 16


@dataclass
class Patching:
    """The API server as the GPU fault sees it: the status patches it sends."""

    patches: list[tuple[str, str, str, dict[str, object]]] = field(default_factory=list)

    def strategic_patch(
        self, kind: str, namespace: str | None, name: str, patch: dict[str, object], status: bool = False
    ) -> dict[str, object]:
        assert status and namespace is not None
        self.patches.append((kind, namespace, name, patch))
        return {}


@dataclass
class Xids:
    injected: list[tuple[str, int, int]] = field(default_factory=list)

    def inject_xid(self, node: str, gpu: int, code: int) -> Path:
        self.injected.append((node, gpu, code))
        return Path("/dev/null")


def _replica(job: Workload, uid: str, name: str) -> dict[str, object]:
    """A running replica pod of the PyTorchJob as the training operator makes it."""
    owner = {"kind": "PyTorchJob", "name": job.name, "uid": f"{job.name}-uid", "controller": True}
    return {
        "metadata": {
            "name": name,
            "namespace": f"runai-{job.project}",
            "uid": uid,
            "ownerReferences": [owner],
        },
        "spec": {"containers": [{"name": "pytorch", "image": "fake"}]},
        "status": {"phase": "Running", "startTime": "2026-12-06T00:00:00Z"},
    }


def test_the_gpu_fault_can_fault_one_replica_of_a_gang(tmp_path: Path) -> None:
    """With the distributed class as its victim (``scenarios.gpu_fault.workload_class: dist``), the
    scenario submits a PyTorchJob and faults one GPU of one replica: the XID on that GPU, the GPU
    unhealthy, that replica's container failed, the fault naming the PyTorchJob."""
    fault = BP.scenarios.gpu_fault.model_copy(update={"workload_class": "dist"})
    bp = BP.model_copy(update={"scenarios": BP.scenarios.model_copy(update={"gpu_fault": fault})})
    cluster = Submitting(bp, tmp_path)
    cluster.client = Patching()  # type: ignore[assignment]
    cluster.dcgm = Xids()  # type: ignore[assignment]
    state = scenarios.Scenario("gpu-fault")
    scenarios.play(cluster, state, 0.0, 1.0, [])
    (victim,) = cluster.submitted
    assert manifests.workload(bp, victim, 60.0)["kind"] == "PyTorchJob" and victim.pods_count > 1
    namespace = f"runai-{victim.project}"
    replicas = [
        _replica(victim, "uid-master", f"{victim.name}-master-0"),
        _replica(victim, "uid-worker", f"{victim.name}-worker-0"),
    ]
    cluster.devices.assign(
        [
            BoundPod(uid, namespace, uid, node, victim.gpus_per_pod, "pytorch", "training", victim.name)
            for uid, node in (("uid-master", "dgx-001"), ("uid-worker", "dgx-002"))
        ]
    )
    scenarios.play(cluster, state, fault.at_s - 1, 1.0, replicas)
    assert state.fault is None  # not before its time
    scenarios.play(cluster, state, fault.at_s, 1.0, replicas)
    assert state.fault is not None
    assert (state.fault.workload, state.fault.workload_uid, state.fault.pod) == (
        victim.name,
        f"{victim.name}-uid",
        f"{victim.name}-master-0",
    )
    assert cluster.dcgm.injected == [("dgx-001", 0, fault.xid)]  # type: ignore[attr-defined]
    assert cluster.devices.unhealthy == {"dgx-001": {0}}
    (patch,) = cluster.client.patches  # type: ignore[attr-defined]
    assert patch[:3] == ("Pod", namespace, f"{victim.name}-master-0")  # one replica; the gang's other waits
    assert (tmp_path / "fault.json").exists()
