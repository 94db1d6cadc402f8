"""The Run:ai view of API objects: quantities as the API server writes them, phases from Jobs and pods."""

from __future__ import annotations

import pytest

from lab.blueprint.runai_blueprint import load
from lab.kube import view
from lab.kube.devices import DeviceAssigner
from lab.paths import BLUEPRINTS_DIR
from lab.runai import Phase

BP = load(BLUEPRINTS_DIR / "runai.yaml")


@pytest.mark.parametrize(
    ("text", "value"), [("250G", 250e9), ("14", 14.0), ("500m", 0.5), ("2Ti", 2**41), ("1e3", 1000.0)]
)
def test_quantities(text: str, value: float) -> None:
    assert view.quantity(text) == value


def _job(conditions: list[dict[str, str]] | None = None) -> dict:  # type: ignore[type-arg]
    return {
        "metadata": {
            "uid": "j1",
            "name": "train-00001",
            "creationTimestamp": "2026-12-02T10:00:00Z",
            "labels": {"project": "team-a", "user": "user-a1", "kai.scheduler/node-pool": "default"},
        },
        "spec": {
            "parallelism": 1,
            "template": {
                "metadata": {"annotations": {}},
                "spec": {
                    "priorityClassName": "train",
                    "containers": [
                        {
                            "name": "main",
                            "resources": {
                                "requests": {"cpu": "14", "memory": "250G"},
                                "limits": {"nvidia.com/gpu": "1"},
                            },
                        }
                    ],
                },
            },
        },
        "status": {"conditions": conditions or []},
    }


def _pod(phase: str, node: str | None) -> dict:  # type: ignore[type-arg]
    return {
        "metadata": {
            "uid": "p1",
            "name": "train-00001-abcde",
            "namespace": "runai-team-a",
            "creationTimestamp": "2026-12-02T10:00:00Z",
            "ownerReferences": [{"kind": "Job", "uid": "j1"}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "main"}]},
        "status": {"phase": phase, "startTime": "2026-12-02T10:00:30Z"},
    }


@pytest.mark.parametrize(
    ("pods", "conditions", "phase"),
    [
        ([], None, Phase.CREATING),
        ([_pod("Pending", None)], None, Phase.PENDING),
        ([_pod("Pending", "dgx-001")], None, Phase.INITIALIZING),
        ([_pod("Running", "dgx-001")], None, Phase.RUNNING),
        (
            [_pod("Succeeded", "dgx-001")],
            [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-12-02T10:10:30Z"}],
            Phase.COMPLETED,
        ),
        (
            [_pod("Failed", "dgx-001")],
            [{"type": "Failed", "status": "True", "lastTransitionTime": "2026-12-02T10:05:30Z"}],
            Phase.FAILED,
        ),
    ],
)
def test_runai_phase_from_the_job_and_its_pods(pods: list, conditions: list | None, phase: Phase) -> None:  # type: ignore[type-arg]
    cluster = view.build(BP, 1796205600.0, [_job(conditions)], pods, DeviceAssigner({}), {}, {})
    workload = cluster.workloads["j1"]
    assert workload.phase is phase
    assert workload.memory_bytes_per_pod == 250_000_000_000 and workload.cpu_millis_per_pod == 14000
    if phase is Phase.COMPLETED:
        assert workload.pending_seconds == 30.0 and workload.running_seconds == 600.0


def _pytorch_job(conditions: list[dict[str, str]]) -> dict:  # type: ignore[type-arg]
    """A PyTorchJob as the API server lists it: no ``kind``, the replicas' templates under its spec."""
    template = _job()["spec"]["template"]
    return {
        "metadata": {**_job()["metadata"], "uid": "pj1", "name": "dist-00001"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": 3, "template": template},
            }
        },
        "status": {"conditions": conditions},
    }


def test_a_pytorchjob_is_one_workload_of_all_its_replicas_and_its_conditions() -> None:
    pods = []
    for name in ("dist-00001-master-0", "dist-00001-worker-0"):
        pod = _pod("Running", "dgx-001")
        pod["metadata"] |= {
            "name": name,
            "uid": name,
            "ownerReferences": [{"kind": "PyTorchJob", "uid": "pj1"}],
        }
        pods.append(pod)
    running = [{"type": "Running", "status": "True", "lastTransitionTime": "2026-12-02T10:01:00Z"}]
    workload = view.build(
        BP, 1796205600.0, [_pytorch_job(running)], pods, DeviceAssigner({}), {}, {}
    ).workloads["pj1"]
    assert (workload.pods_count, len(workload.pods), workload.phase) == (4, 2, Phase.RUNNING)
    done = [{"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-12-02T10:11:00Z"}]
    finished = view.build(BP, 1796205600.0, [_pytorch_job(done)], pods, DeviceAssigner({}), {}, {}).workloads[
        "pj1"
    ]
    assert finished.phase is Phase.COMPLETED


def test_a_users_workload_with_only_its_queue_label_has_its_namespaces_project_and_its_nodes_pool() -> None:
    job = _job()
    job["metadata"] |= {"namespace": "runai-team-c", "labels": {"kai.scheduler/queue": "team-c"}}
    waiting = view.build(BP, 1796205600.0, [job], [_pod("Pending", None)], DeviceAssigner({}), {}, {})
    assert (waiting.workloads["j1"].project, waiting.workloads["j1"].department) == ("team-c", "product")
    assert waiting.workloads["j1"].nodepool == ""  # no pool until the pod-group assigner's pool binds it
    bound = view.build(BP, 1796205600.0, [job], [_pod("Running", "dgxi-001")], DeviceAssigner({}), {}, {})
    assert bound.workloads["j1"].nodepool == "inference"
