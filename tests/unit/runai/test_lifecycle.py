"""Lifecycle -> allocation -> DCGM labels: consistent at every step of a busy run."""

from __future__ import annotations

from pathlib import Path

from lab.exposition import parse_samples
from lab.runai.cluster_state import ALLOCATED, Phase
from lab.runai.simulation import Simulation

from .helpers import fresh


def dcgm_pods(sim: Simulation) -> dict[tuple[str, int], tuple[str, str, str]]:
    """(node, gpu) -> (pod, namespace, container) as the shim's targets label them right now."""
    out: dict[tuple[str, int], tuple[str, str, str]] = {}
    for name, node in sim.dcgm.nodes.items():
        for family, labels, _ in parse_samples(node.scrape()):
            if family == "DCGM_FI_DEV_GPU_UTIL" and "pod" in labels:
                out[(labels["Hostname"], int(labels["gpu"]))] = (
                    labels["pod"],
                    labels["namespace"],
                    labels["container"],
                )
                assert labels["Hostname"] == name
    return out


def test_allocations_and_dcgm_labels_agree_at_every_step(tmp_path: Path) -> None:
    run = fresh(tmp_path, "preemption-storm")
    sim = run.sim
    seen_phases: set[Phase] = set()
    for _ in range(150):
        sim.step()
        expected: dict[tuple[str, int], tuple[str, str, str]] = {}
        for w in sim.workloads.values():
            seen_phases.add(w.phase)
            held = [(p.node, g) for p in w.live_pods() if p.node is not None for g in p.gpus]
            if w.phase in ALLOCATED:
                assert len(held) == w.gpus, f"{w.name} holds {len(held)} of {w.gpus} GPUs"
                for pod in w.live_pods():
                    for gpu in pod.gpus:
                        assert pod.node is not None
                        expected[(pod.node, gpu)] = (pod.name, w.namespace, "main")
            else:
                assert not [p for p in w.live_pods() if p.allocated], f"{w.name} {w.phase} still holds GPUs"
        holders = {(n.name, g): pod for n in sim.nodes.values() for g, (_, pod) in n.holders.items()}
        assert holders == {key: value[0] for key, value in expected.items()}, "a GPU is held twice or leaked"
        assert dcgm_pods(sim) == expected
    assert {Phase.PENDING, Phase.RUNNING} <= seen_phases


def test_phases_follow_creating_pending_initializing_running_failed(tmp_path: Path) -> None:
    run = fresh(tmp_path, "gpu-fault")
    run.sim.run(120)
    victim = run.sim.workloads[next(iter(run.sim.workloads))]
    assert [phase for _, phase in victim.transitions] == [
        Phase.CREATING,
        Phase.PENDING,
        Phase.INITIALIZING,
        Phase.RUNNING,
        Phase.FAILED,
    ]


def test_eviction_returns_a_running_workload_to_pending_with_new_pods(tmp_path: Path) -> None:
    run = fresh(tmp_path, "preemption-storm")
    run.sim.run(150)
    evicted = [w for w in run.sim.workloads.values() if w.evictions]
    assert evicted
    for w in evicted:
        phases = [phase for _, phase in w.transitions]
        assert phases[:4] == [Phase.CREATING, Phase.PENDING, Phase.INITIALIZING, Phase.RUNNING]
        assert Phase.PENDING in phases[4:]
        assert len(w.pods) > w.pods_count  # deleted pods stay in history, new ones replace them
        assert all(p.deleted_at is not None for p in w.pods[: w.pods_count])


def test_runs_repeat_with_the_same_seed(tmp_path: Path) -> None:
    a = fresh(tmp_path / "a", "quota-exhaustion", seed=7)
    b = fresh(tmp_path / "b", "quota-exhaustion", seed=7)
    a.sim.run(60)
    b.sim.run(60)
    assert [(w.name, w.phase, w.user) for w in a.sim.workloads.values()] == [
        (w.name, w.phase, w.user) for w in b.sim.workloads.values()
    ]
    assert [e.split('"creationTimestamp"')[0] for e in a.events] == [
        e.split('"creationTimestamp"')[0] for e in b.events
    ]
