"""KAI semantics of one session: quota, limit, reclaim order, priority preemption, gang."""

from __future__ import annotations

from lab.runai.scheduler import run_session

from .helpers import job, queue, snapshot


def test_non_preemptible_never_goes_over_quota() -> None:
    pending = [job(f"b{i}", "c", priority=100, at=i) for i in range(4)]
    result = run_session(snapshot([queue("c", 2)], {"n1": 8}, pending))
    assert sorted(result.binds) == ["b0", "b1"]
    for uid in ("b2", "b3"):
        verdict = result.unschedulable[uid]
        assert verdict.reason == "NonPreemptibleOverQuota"
        assert verdict.message.startswith(
            "Non-preemptible workload is over quota. Workload requested 1 GPUs, "
        )
        assert (
            "but c quota is 2 GPUs, while 2 GPUs are already allocated for non-preemptible pods."
            in verdict.message
        )


def test_preemptible_uses_free_gpus_over_quota_up_to_fair_share() -> None:
    pending = [job(f"t{i}", "a", at=i) for i in range(6)]
    result = run_session(snapshot([queue("a", 2), queue("b", 2)], {"n1": 4}, pending))
    assert len(result.binds) == 4  # b asks nothing: a's fair share is the whole pool
    assert result.unschedulable["t4"].reason == ""


def test_over_limit_is_reported_with_the_queue_limit() -> None:
    pending = [job("big", "a", gpus=4)]
    result = run_session(snapshot([queue("a", 2, limit=3)], {"n1": 8}, pending))
    verdict = result.unschedulable["big"]
    assert verdict.reason == "OverLimit"
    assert verdict.message == (
        "a quota has reached the allowable limit of GPUs. Limit is 3 GPUs, currently 0 GPUs allocated "
        "and workload requested 4 GPUs"
    )


def test_gang_places_all_pods_or_none() -> None:
    gang = job("dist", "a", gpus=4, pods=3)
    result = run_session(snapshot([queue("a", 16)], {"n1": 4, "n2": 4}, [gang]))
    assert "dist" not in result.binds  # 3 pods x 4 GPUs do not fit 2 nodes x 4 GPUs
    result = run_session(snapshot([queue("a", 16)], {"n1": 4, "n2": 4, "n3": 4}, [gang]))
    assert sorted(node for node, _ in result.binds["dist"]) == ["n1", "n2", "n3"]


def test_bin_packing_fills_the_fullest_node_and_lowest_indices() -> None:
    running = [job("r", "a", gpus=6, placement=(("n1", (0, 1, 2, 3, 4, 5)),))]
    result = run_session(snapshot([queue("a", 16)], {"n1": 8, "n2": 8}, [job("new", "a", gpus=2)], running))
    assert result.binds["new"] == (("n1", (6, 7)),)


def test_reclaim_takes_from_the_most_over_fair_share_queue_lowest_priority_newest_first() -> None:
    running = [
        job("a-old", "a", at=1, placement=(("n1", (0,)),)),
        job("a-new", "a", at=5, placement=(("n1", (1,)),)),
        job("a-hi", "a", priority=75, at=9, placement=(("n1", (2,)),)),
        job("b-1", "b", at=2, placement=(("n1", (3,)),)),
    ]
    claimant = job("c-1", "c", at=10)
    queues = [queue("a", 0), queue("b", 1), queue("c", 1)]
    result = run_session(snapshot(queues, {"n1": 4}, [claimant], running))
    assert [(e.victim.uid, e.action) for e in result.evictions] == [("a-new", "reclaim")]
    assert "c-1" not in result.binds  # bound in the next session, onto the released GPU


def test_priority_preemption_stays_within_the_project() -> None:
    running = [
        job("low", "a", priority=50, at=1, placement=(("n1", (0, 1)),), gpus=2),
        job("other", "b", priority=50, at=2, placement=(("n1", (2, 3)),), gpus=2),
    ]
    urgent = job("urgent", "a", priority=75, gpus=2, at=3)
    queues = [queue("a", 2, weight=0), queue("b", 2, weight=0)]
    result = run_session(snapshot(queues, {"n1": 4}, [urgent], running))
    assert [(e.victim.uid, e.action, e.preemptor.uid) for e in result.evictions] == [
        ("low", "preempt", "urgent")
    ]
    assert result.preemption_attempts == 1


def test_non_preemptible_work_is_never_a_victim() -> None:
    running = [job("build", "a", priority=100, placement=(("n1", (0,)),))]
    result = run_session(
        snapshot([queue("a", 1), queue("b", 1)], {"n1": 1}, [job("x", "b", priority=125)], running)
    )
    assert result.evictions == []
