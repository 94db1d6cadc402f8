"""The numbers behind the API: one snapshot per look, by scope, equal to the runai_* series."""

from __future__ import annotations

from pathlib import Path

from lab.runai.api import measures

from ...kube.api_objects import BP, NODE, VICTIM_UID, WAITING, busy


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


def test_node_rows_carry_the_cpu_and_memory_of_the_pods_bound_there_only(tmp_path: Path) -> None:
    cluster = busy(tmp_path).look()
    victim = next(w for w in cluster.workloads.values() if w.uid == VICTIM_UID)
    rows = {r.node: r.values for r in measures.node_rows(cluster)}
    assert (rows[NODE]["ALLOCATED_CPU_CORES"], rows[NODE]["ALLOCATED_CPU_MEMORY_BYTES"]) == (
        victim.cpu_millis_per_pod / 1000.0,
        float(victim.memory_bytes_per_pod),
    )
    # The waiting workload's pod is bound nowhere: no other node carries a request.
    assert all(
        (v["ALLOCATED_CPU_CORES"], v["ALLOCATED_CPU_MEMORY_BYTES"]) == (0.0, 0.0)
        for node, v in rows.items()
        if node != NODE
    )
