"""Each failure mode's signature, headless (no HTTP, no sleeps)."""

from __future__ import annotations

import json
from pathlib import Path

from lab.exposition import parse_samples
from lab.runai.cluster_state import Phase
from lab.runai.headless import kai_metrics, main_metrics, run_headless
from lab.runai.scenarios import GpuFaultHook
from lab.runai.simulation import Simulation

from .helpers import shipped


def test_quota_exhaustion_grows_a_backlog_with_the_quota_reason(tmp_path: Path) -> None:
    backlog: list[int] = []

    def count(sim: Simulation) -> None:
        backlog.append(
            sum(1 for w in sim.workloads.values() if w.project == "team-c" and w.phase is Phase.PENDING)
        )

    run = run_headless(shipped(), "quota-exhaustion", steps=240, out_dir=tmp_path, on_step=count)
    assert backlog[-1] > backlog[120] > backlog[40] >= 0
    assert backlog[-1] >= 20
    reasons = [json.loads(line) for line in run.events]
    quota = [
        e
        for e in reasons
        if e["reason"] == "Unschedulable" and e["involvedObject"]["namespace"] == "runai-team-c"
    ]
    assert quota
    assert all(
        e["message"].startswith("NonPreemptibleOverQuota: Non-preemptible workload is over quota.")
        for e in quota
        if e["involvedObject"]["kind"] == "Pod"
    )
    assert any(e["involvedObject"]["kind"] == "PodGroup" for e in quota)
    # team-c's non-preemptible allocation stays at its quota (8 GPUs in pool default).
    builds = [
        w
        for w in run.sim.workloads.values()
        if w.project == "team-c" and not w.preemptible and w.phase in (Phase.INITIALIZING, Phase.RUNNING)
    ]
    assert sum(w.gpus for w in builds) <= 8


def test_preemption_storm_evicts_many_and_churns_series(tmp_path: Path) -> None:
    pods_seen: set[str] = set()

    def collect(sim: Simulation) -> None:
        for node in sim.dcgm.nodes.values():
            pods_seen.update(
                labels["pod"] for _, labels, _ in parse_samples(node.scrape()) if "pod" in labels
            )

    run = run_headless(shipped(), "preemption-storm", steps=150, out_dir=tmp_path, on_step=collect)
    events = [json.loads(line) for line in run.events]
    evicts = [e for e in events if e["reason"] == "Evict"]
    assert len(evicts) >= 10
    assert all(e["involvedObject"]["kind"] == "PodGroup" for e in evicts)
    assert all(e["metadata"]["annotations"]["evictor-action-type"] == "reclaim" for e in evicts)
    assert all(
        e["message"].endswith(".") and "was preempted by workload runai-team-b/pg-" in e["message"]
        for e in evicts
    )
    assert sum(e["reason"] == "Killing" for e in events) == len(evicts)
    assert run.sim.deleted_pods >= len(evicts)
    # Every evicted borrower is back to Pending with a new pod; its old pod's DCGM series ended.
    current = {p.name for w in run.sim.workloads.values() for p in w.live_pods()}
    assert len(pods_seen - current) >= len(evicts)
    kai = parse_samples(kai_metrics(run.sim, "default"))
    evicted = [v for name, labels, v in kai if name == "kai_pod_group_evicted_pods_total"]
    assert len(evicted) == len(evicts)
    assert all(
        labels["action"] == "reclaim" for name, labels, _ in kai if name == "kai_pod_group_evicted_pods_total"
    )


def test_gpu_fault_fails_the_pod_and_shows_the_xid_on_the_same_gpu(tmp_path: Path) -> None:
    run = run_headless(shipped(), "gpu-fault", steps=120, out_dir=tmp_path)
    assert isinstance(run.hook, GpuFaultHook) and run.hook.fault is not None
    fault = run.hook.fault
    assert fault.workload.phase is Phase.FAILED
    assert fault.workload.pods[0].phase.value == "Failed"
    xids = [
        labels
        for name, labels, v in parse_samples(run.sim.dcgm.nodes[fault.node].scrape())
        if name == "DCGM_FI_DEV_XID_ERRORS" and v > 0
    ]
    assert [(x["gpu"], x["err_code"], x["err_msg"]) for x in xids] == [
        (str(fault.gpu), "79", "GPU has fallen off the bus")
    ]
    assert "pod" not in xids[0]  # the failed pod released the GPU
    backoff = [json.loads(line) for line in run.events if '"reason":"BackOff"' in line]
    assert len(backoff) == 1
    assert backoff[0]["source"] == {"component": "kubelet", "host": fault.node}
    assert backoff[0]["message"] == (
        "Back-off restarting failed container main in pod "
        f"{fault.pod}_{fault.workload.namespace}({fault.pod_uid})"
    )
    text = main_metrics(run.sim)
    phase = [
        labels
        for name, labels, v in parse_samples(text)
        if name == "kube_pod_status_phase" and labels["pod"] == fault.pod and v == 1
    ]
    assert [p["phase"] for p in phase] == ["Failed"]
    assert (fault.node, fault.gpu) not in {(n.name, g) for n in run.sim.nodes.values() for g in n.free_gpus()}


def test_workload_series_are_bounded_by_retention(tmp_path: Path) -> None:
    run = run_headless(shipped(), "quota-exhaustion", steps=720, out_dir=tmp_path)
    ids = {
        labels["workload_id"]
        for name, labels, _ in parse_samples(main_metrics(run.sim))
        if name == "runai_wait_time_seconds_per_workload"
    }
    finished = sum(1 for w in run.sim.workloads.values() if w.finished_at is not None)
    assert ids == {w.uid for w in run.sim.workloads.values() if w.phase is not Phase.CREATING}
    assert all(
        run.sim.t - (w.finished_at or run.sim.t) < run.sim.bp.lifecycle.retention_s
        for w in run.sim.workloads.values()
    )
    assert finished > 0
