"""GPU device assignment, the emulated kubelet step: lowest free healthy GPUs, freed when pods end."""

from __future__ import annotations

from lab.kube.devices import BoundPod, DeviceAssigner


def pod(uid: str, node: str = "n1", gpus: int = 1) -> BoundPod:
    return BoundPod(uid, "ns", f"pod-{uid}", node, gpus, "main", "training")


def test_bound_pods_get_the_lowest_free_gpus_and_keep_them() -> None:
    devices = DeviceAssigner({"n1": 8})
    assert devices.assign([pod("a", gpus=2), pod("b", gpus=1)])
    assert devices.gpus_of("a") == [("n1", 0), ("n1", 1)]
    assert devices.gpus_of("b") == [("n1", 2)]
    assert not devices.assign([pod("a", gpus=2), pod("b", gpus=1)]), "nothing changed"
    assert devices.gpus_of("a") == [("n1", 0), ("n1", 1)]


def test_an_ended_pod_frees_its_gpus_for_the_next() -> None:
    devices = DeviceAssigner({"n1": 2})
    devices.assign([pod("a", gpus=2)])
    assert devices.assign([pod("c", gpus=1)])
    assert devices.gpus_of("a") == [] and devices.gpus_of("c") == [("n1", 0)]


def test_an_unhealthy_gpu_is_never_handed_out_again() -> None:
    devices = DeviceAssigner({"n1": 2})
    devices.assign([pod("a", gpus=1)])
    devices.mark_unhealthy("n1", 0)
    devices.assign([pod("b", gpus=1)])
    assert devices.gpus_of("b") == [("n1", 1)]
    assert devices.free("n1") == []


def test_a_pod_that_does_not_fit_gets_nothing_rather_than_a_part() -> None:
    devices = DeviceAssigner({"n1": 2})
    devices.assign([pod("a", gpus=1), pod("b", gpus=2)])
    assert devices.gpus_of("a") == [("n1", 0)] and devices.gpus_of("b") == []


def test_the_mapping_is_what_the_dcgm_shim_reads() -> None:
    devices = DeviceAssigner({"n1": 8, "n2": 8})
    devices.assign([pod("a", "n2", 2)])
    mapping = devices.mapping()
    assert list(mapping) == ["n2"]
    assert [(g, e.pod, e.namespace, e.container, e.workload_class) for g, e in mapping["n2"].items()] == [
        (0, "pod-a", "ns", "main", "training"),
        (1, "pod-a", "ns", "main", "training"),
    ]


def test_the_mapping_names_each_pods_workload_for_the_shims_pace() -> None:
    devices = DeviceAssigner({"n1": 8, "n2": 8})
    replicas = [
        BoundPod(f"u{i}", "ns", f"gang-{role}-0", f"n{i + 1}", 2, "pytorch", "training", "gang")
        for i, role in enumerate(("master", "worker"))
    ]
    devices.assign(replicas)
    assert {(node, e.pod, e.workload) for node, gpus in devices.mapping().items() for e in gpus.values()} == {
        ("n1", "gang-master-0", "gang"),
        ("n2", "gang-worker-0", "gang"),
    }


def test_what_every_pod_holds_in_one_pass_is_what_each_holds() -> None:
    devices = DeviceAssigner({"n1": 8, "n2": 8})
    devices.assign([pod("a", "n2", 2), pod("b", "n1", 3), pod("c", "n2", 1)])
    assert devices.held() == {uid: devices.gpus_of(uid) for uid in ("a", "b", "c")}
