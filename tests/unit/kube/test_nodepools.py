from __future__ import annotations

from typing import Any

import pytest

from lab.blueprint.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, load
from lab.kube import nodepools
from lab.kube.manifests import NODE_POOL_LABEL, QUEUE_LABEL

BP = load(DEFAULT_RUNAI_BLUEPRINT)  # team-a: [default]; team-c: [inference, default]
ALL_FREE = {"default": 48, "inference": 16}


def pod_group(namespace: str, queue: str, name: str = "pg-job-1") -> dict[str, Any]:
    """A PodGroup as KAI's podgrouper makes it for a workload that named no node pool."""
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "uid": "u-1", "labels": {QUEUE_LABEL: queue}},
        "spec": {"minMember": 2, "queue": queue},
    }


def pod(group: str, gpus: int, node: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    return {
        "metadata": {"namespace": "runai-team-a", "annotations": {nodepools.POD_GROUP_ANNOTATION: group}},
        "spec": {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": phase},
    }


def test_a_queue_of_the_project_in_a_pool_keeps_that_pool() -> None:
    decided = nodepools.decide(BP, pod_group("runai-team-c", "team-c-inference"), 16, {"inference": 0})
    assert decided == nodepools.Assignment(
        "inference", "team-c-inference", "its queue team-c-inference is project team-c's in that pool"
    )


@pytest.mark.parametrize("queue", ["team-c", "default-queue", ""])
def test_the_project_or_no_queue_takes_the_first_pool_of_the_priority_list_with_room(queue: str) -> None:
    decided = nodepools.decide(BP, pod_group("runai-team-c", queue), 8, ALL_FREE)
    assert isinstance(decided, nodepools.Assignment)
    assert (decided.pool, decided.queue) == ("inference", "team-c-inference")
    # The first pool full: the next with room.
    decided = nodepools.decide(BP, pod_group("runai-team-c", queue), 8, {"inference": 4, "default": 8})
    assert isinstance(decided, nodepools.Assignment)
    assert (decided.pool, decided.queue) == ("default", "team-c-default")
    assert "first pool of project team-c's priority list (inference, default) with 8 GPUs free" in decided.why


def test_no_pool_with_room_waits_in_the_first() -> None:
    decided = nodepools.decide(BP, pod_group("runai-team-c", "team-c"), 64, ALL_FREE)
    assert isinstance(decided, nodepools.Assignment)
    assert (decided.pool, decided.queue) == ("inference", "team-c-inference")
    assert "it waits in the first" in decided.why


def test_a_namespace_of_no_project_is_stranded_with_the_fix() -> None:
    decided = nodepools.decide(BP, pod_group("default", "team-a-default"), 8, ALL_FREE)
    assert isinstance(decided, nodepools.Stranded)
    assert "namespace default is no project's" in decided.reason
    assert "runai-team-a, runai-team-b, runai-team-c" in decided.reason
    assert f"{NODE_POOL_LABEL}=<pool>" in decided.reason


@pytest.mark.parametrize("queue", ["team-b-default", "team-a-inference", "nonsense"])
def test_a_queue_that_is_not_the_projects_is_stranded_naming_its_queues(queue: str) -> None:
    decided = nodepools.decide(BP, pod_group("runai-team-a", queue), 8, ALL_FREE)
    assert isinstance(decided, nodepools.Stranded)
    assert f"queue {queue} is not one of project team-a's (team-a-default)" in decided.reason


def test_the_patch_sets_the_pool_label_the_queue_label_and_the_queue() -> None:
    patch = nodepools.patch(nodepools.Assignment("default", "team-a-default", "why"))
    assert patch == {
        "metadata": {"labels": {NODE_POOL_LABEL: "default", QUEUE_LABEL: "team-a-default"}},
        "spec": {"queue": "team-a-default"},
    }


def test_the_event_is_a_warning_on_the_pod_group_from_the_assigner() -> None:
    group = pod_group("default", "x")
    event = nodepools.event(group, nodepools.Stranded("because"), "2026-12-07T08:00:00Z")
    assert event["involvedObject"] == {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "name": "pg-job-1",
        "namespace": "default",
        "uid": "u-1",
    }
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "Unschedulable", "because")
    assert event["source"] == {"component": "pod-group-assigner"}
    assert event["metadata"] == {"generateName": "pg-job-1.", "namespace": "default"}


def test_a_gangs_gpus_are_its_annotated_pods() -> None:
    pods = [pod("pg-job-1", 8), pod("pg-job-1", 8), pod("pg-other", 4)]
    assert nodepools.gang_gpus(pod_group("runai-team-a", "team-a"), pods) == (16, 2)
    assert nodepools.gang_gpus(pod_group("runai-team-b", "team-b"), pods) == (0, 0)


def test_free_gpus_count_live_bound_pods_per_pool() -> None:
    pods = [
        pod("a", 8, "dgx-001", "Running"),
        pod("b", 4, "dgx-002", "Pending"),  # bound, not yet running: its GPUs are taken
        pod("c", 8, "dgx-003", "Succeeded"),  # done: its GPUs are free again
        pod("d", 8, None),  # not bound
    ]
    free = nodepools.free_gpus_by_pool(BP, pods)
    assert free == {"default": 48 - 12, "inference": 16}
