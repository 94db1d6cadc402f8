"""The blueprint's Kubernetes objects: KAI queues per pool with parents, namespaces, kwok nodes, Jobs and
PyTorchJobs."""

from __future__ import annotations

import random

from lab.blueprint.runai_blueprint import load
from lab.kube import manifests
from lab.paths import BLUEPRINTS_DIR
from lab.runai import Arrivals

BP = load(BLUEPRINTS_DIR / "runai.yaml")


def test_a_queue_per_owner_and_pool_it_holds_quota_in_labelled_with_the_pool() -> None:
    queues = {q["metadata"]["name"]: q for q in manifests.queues(BP)}
    assert set(queues) == {
        "research-default",
        "product-default",
        "product-inference",
        "team-a-default",
        "team-b-default",
        "team-c-default",
        "team-c-inference",
    }
    c_inf = queues["team-c-inference"]
    assert c_inf["metadata"]["labels"] == {"kai.scheduler/node-pool": "inference"}
    assert c_inf["spec"]["parentQueue"] == "product-inference"
    assert c_inf["spec"]["resources"]["gpu"] == {"quota": 16, "limit": 16, "overQuotaWeight": 1}
    assert c_inf["spec"]["displayName"] == "team-c"
    # CPU and memory are not the quota: unlimited, or KAI calls every non-preemptible pod over quota.
    assert c_inf["spec"]["resources"]["cpu"]["quota"] == -1
    assert "parentQueue" not in queues["research-default"]["spec"]


def test_parents_come_before_their_children() -> None:
    names = [q["metadata"]["name"] for q in manifests.queues(BP)]
    for q in manifests.queues(BP):
        parent = q["spec"].get("parentQueue")
        if parent:
            assert names.index(parent) < names.index(q["metadata"]["name"])


def test_nodes_carry_the_pool_label_kwoks_annotation_and_the_dgx_shape() -> None:
    nodes = manifests.nodes(BP)
    assert len(nodes) == 8
    node = next(n for n in nodes if n["metadata"]["name"] == "dgxi-001")
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert node["metadata"]["labels"]["kai.scheduler/node-pool"] == "inference"
    assert node["status"]["allocatable"] == {
        "cpu": "112",
        "memory": "2000000000000",
        "pods": "110",
        "nvidia.com/gpu": "8",
    }


def test_namespaces_are_runai_projects_with_their_queue_label() -> None:
    assert {n["metadata"]["name"]: n["metadata"]["labels"] for n in manifests.namespaces(BP)} == {
        "runai-team-a": {"runai/queue": "team-a"},
        "runai-team-b": {"runai/queue": "team-b"},
        "runai-team-c": {"runai/queue": "team-c"},
    }


def _workload(will_fail: bool, run_s: float = 600.0):
    arrivals = Arrivals(BP, random.Random(1))
    return arrivals.make(
        BP.workload_class("dist"), 0.0, project="team-a", run_seconds=run_s, will_fail=will_fail
    )


def test_a_job_has_the_kai_queue_priority_class_scheduler_and_gpus() -> None:
    w = _workload(False)
    job = manifests.job(BP, w, time_scale=10.0)
    spec = job["spec"]
    assert (spec["parallelism"], spec["completions"]) == (4, 4)
    pod = spec["template"]
    assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "team-a-default"
    assert pod["metadata"]["labels"]["kai.scheduler/node-pool"] == "default"
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["spec"]["priorityClassName"] == "train"
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert container["resources"]["requests"]["cpu"] == "112000m"
    # 600 blueprint seconds at 10x: kwok completes the pod 60 s after it runs, exactly (no jitter).
    annotations = pod["metadata"]["annotations"]
    assert annotations["pod-complete.stage.kwok.x-k8s.io/delay"] == "60000ms"
    assert annotations["pod-complete.stage.kwok.x-k8s.io/jitter-delay"] == "60000ms"
    rules = spec["podFailurePolicy"]["rules"]
    assert rules[0] == {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    assert rules[1]["action"] == "FailJob"


def test_a_failing_workload_takes_kwoks_container_failure_stage() -> None:
    pod = manifests.job(BP, _workload(True, 120.0), time_scale=1.0)["spec"]["template"]
    assert pod["metadata"]["labels"]["pod-container-running-failed.stage.kwok.x-k8s.io"] == "true"
    annotations = pod["metadata"]["annotations"]
    assert annotations["pod-container-running-failed.stage.kwok.x-k8s.io/delay"] == "120000ms"
    assert annotations["pod-container-running-failed.stage.kwok.x-k8s.io/exit-code"] == "1"
    assert "pod-complete.stage.kwok.x-k8s.io/delay" not in annotations


def test_a_distributed_workload_is_a_pytorchjob_of_one_master_and_its_workers() -> None:
    w = _workload(False)  # the blueprint's distributed class: 4 pods of 8 GPUs
    obj = manifests.workload(BP, w, time_scale=10.0)
    assert (obj["apiVersion"], obj["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    # KAI's podgrouper reads the queue from the top owner's labels (defaultgrouper.CalcPodGroupQueue).
    assert obj["metadata"]["labels"]["kai.scheduler/queue"] == "team-a-default"
    specs = obj["spec"]["pytorchReplicaSpecs"]
    assert {name: spec["replicas"] for name, spec in specs.items()} == {"Master": 1, "Worker": 3}
    assert {spec["restartPolicy"] for spec in specs.values()} == {"ExitCode"}
    pod = specs["Worker"]["template"]
    # The operator's webhook requires a container named "pytorch"; GPUs and kwok's stages as a Job's.
    (container,) = pod["spec"]["containers"]
    assert container["name"] == "pytorch" and container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["metadata"]["annotations"]["pod-complete.stage.kwok.x-k8s.io/delay"] == "60000ms"


def test_a_single_pod_workload_stays_a_job() -> None:
    w = Arrivals(BP, random.Random(1)).make(BP.workload_class("train"), 0.0, project="team-a", gpus_per_pod=2)
    obj = manifests.workload(BP, w, time_scale=1.0)
    assert obj["kind"] == "Job" and obj["spec"]["template"]["spec"]["containers"][0]["name"] == "main"


def test_a_workload_of_a_class_that_names_no_pool_names_its_project_and_no_pool() -> None:
    """As a user's kubectl job: the pod-group assigner (lab/kube/nodepools.py) chooses the pool."""
    infer = BP.workload_class("infer")
    assert infer.nodepool is None
    job = manifests.workload(BP, Arrivals(BP, random.Random(2)).make(infer, 0.0), 1.0)
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert labels[manifests.QUEUE_LABEL] == "team-c"
        assert manifests.NODE_POOL_LABEL not in labels
