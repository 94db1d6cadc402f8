"""The numbers behind the API: one snapshot per look, by scope, equal to the runai_* series."""

from __future__ import annotations

from pathlib import Path

from lab.runai.api import measures

from ...kube.api_objects import BP, VICTIM_UID, WAITING, busy


def test_a_snapshot_has_the_cluster_each_node_pool_and_each_workload(tmp_path: Path) -> None:
    cluster = busy(tmp_path).look()
    snapshot = measures.snapshot(cluster)
    pools = {measures.nodepool_scope(p.name) for p in BP.node_pools}
    workloads = {measures.workload_scope(w.uid) for w in cluster.workloads.values()}
    assert set(snapshot) == {measures.CLUSTER} | pools | workloads
    assert snapshot[measures.CLUSTER]["TOTAL_GPU"] == 64.0
    assert snapshot[measures.nodepool_scope("default")]["ALLOCATED_GPU"] == 1.0
    victim = snapshot[measures.workload_scope(VICTIM_UID)]
    assert (victim["GPU_ALLOCATION"], victim["POD_COUNT"], victim["RUNNING_POD_COUNT"]) == (1.0, 1.0, 1.0)


def test_a_pending_workload_has_pod_counts_but_no_allocation(tmp_path: Path) -> None:
    cluster = busy(tmp_path).look()
    waiting = next(w for w in cluster.workloads.values() if w.name == WAITING)
    assert measures.workload_values(cluster, waiting) == {"POD_COUNT": 1.0, "RUNNING_POD_COUNT": 0.0}


def test_queue_rows_carry_quotas_and_allocations_per_node_pool(tmp_path: Path) -> None:
    cluster = busy(tmp_path).look()
    projects = {(r.name, r.pool): r.values for r in measures.project_rows(cluster)}
    assert projects[("team-a", "default")] == {
        "GPU_QUOTA": 24.0,
        "GPU_ALLOCATION": 1.0,
        "GPU_ALLOCATION_NON_PREEMPTIBLE": 0.0,  # train is preemptible (priority 50)
        "CPU_ALLOCATION": 14.0,
    }
    departments = {(r.name, r.pool): r.values["GPU_QUOTA"] for r in measures.department_rows(cluster)}
    assert departments == {
        ("research", "default"): 40.0,
        ("research", "inference"): 0.0,
        ("product", "default"): 8.0,
        ("product", "inference"): 16.0,
    }
