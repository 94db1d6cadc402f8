"""Kubernetes mode: pod attributes from the pod-resources file, only on mapped GPUs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.dcgm import kubernetes
from lab.dcgm.kubernetes import PodInfo, PodResourcesError, pod_resources_document, read_pod_resources
from lab.dcgm.node import EmulatedNode

from .dcgm_testing import parse_line, sample_lines


def write_pods(path: Path, nodes: object) -> Path:
    path.write_text(json.dumps({"nodes": nodes}))
    return path


def labels_by_gpu(text: str, family: str) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for line in sample_lines(text):
        parsed = parse_line(line)
        if parsed.name == family:
            out[dict(parsed.labels)["gpu"]] = parsed.labels
    return out


def test_mapped_gpu_gets_container_namespace_pod_in_sorted_order(
    tmp_path: Path, make_node: Callable[..., EmulatedNode]
) -> None:
    pods = write_pods(
        tmp_path / "pods.json",
        {"gpu-node-001": {"0": {"pod": "train-0", "namespace": "team-a", "container": "main"}}},
    )
    node = make_node(gpus=2, kubernetes=True, pod_resources=pods)
    labels = labels_by_gpu(node.scrape(), "DCGM_FI_DEV_GPU_UTIL")
    assert [k for k, _ in labels["0"]][-4:] == ["DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod"]
    assert dict(labels["0"])["pod"] == "train-0"
    assert {"pod", "namespace", "container"}.isdisjoint(dict(labels["1"]))


def test_xid_attributes_sort_among_pod_attributes(
    tmp_path: Path, make_node: Callable[..., EmulatedNode]
) -> None:
    pods = write_pods(
        tmp_path / "pods.json", {"gpu-node-001": {"0": {"pod": "p", "namespace": "n", "container": "c"}}}
    )
    node = make_node(gpus=1, kubernetes=True, pod_resources=pods)
    keys = [k for k, _ in labels_by_gpu(node.scrape(), "DCGM_FI_DEV_XID_ERRORS")["0"]]
    assert keys[-5:] == ["container", "err_code", "err_msg", "namespace", "pod"]


def test_other_nodes_entries_do_not_apply(tmp_path: Path, make_node: Callable[..., EmulatedNode]) -> None:
    pods = write_pods(
        tmp_path / "pods.json", {"other": {"0": {"pod": "p", "namespace": "n", "container": "c"}}}
    )
    node = make_node(gpus=1, kubernetes=True, pod_resources=pods)
    assert "pod=" not in node.scrape()


def test_missing_file_behaves_like_missing_kubelet_socket(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], caplog: pytest.LogCaptureFixture
) -> None:
    """kubernetes.go@4.5.3-4.8.2:297-301: no socket, no pod labels, and nothing logged."""
    node = make_node(gpus=1, kubernetes=True, pod_resources=tmp_path / "absent.json")
    caplog.clear()
    assert "pod=" not in node.scrape()
    assert caplog.text == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "invalid JSON"),
        ('{"pods": []}', "expected an object"),
        ('{"nodes": {"gpu-node-001": {"0": "p"}}}', "must be an object"),
        ('{"nodes": {"gpu-node-001": {"0": {"pod": "p"}}}}', "needs string fields"),
    ],
    ids=["truncated write", "wrong top level", "entry not an object", "missing fields"],
)
def test_a_malformed_file_is_a_failed_call_logged_and_skipped(
    tmp_path: Path,
    make_node: Callable[..., EmulatedNode],
    caplog: pytest.LogCaptureFixture,
    content: str,
    message: str,
) -> None:
    """kubernetes.go@4.5.3-4.8.2:332-336: WARN, no pod labels on any series, the scrape succeeds."""
    (tmp_path / "pods.json").write_text(content)
    with pytest.raises(PodResourcesError, match=message):
        read_pod_resources(tmp_path / "pods.json", "gpu-node-001")
    node = make_node(gpus=1, kubernetes=True, pod_resources=tmp_path / "pods.json")
    text = node.scrape()
    assert "DCGM_FI_DEV_GPU_TEMP{" in text and "pod=" not in text
    (record,) = [r for r in caplog.records if r.getMessage() == "Failed to get pod mappings"]
    assert record.levelname == "WARNING" and message in record.attrs["error"]  # type: ignore[attr-defined]


def test_file_is_reread_on_every_scrape(tmp_path: Path, make_node: Callable[..., EmulatedNode]) -> None:
    path = tmp_path / "pods.json"
    node = make_node(gpus=1, kubernetes=True, pod_resources=path)
    assert "pod=" not in node.scrape()
    write_pods(path, {"gpu-node-001": {"0": {"pod": "p", "namespace": "n", "container": "c"}}})
    assert 'pod="p"' in node.scrape()


def test_class_field_is_read_but_never_a_label(tmp_path: Path) -> None:
    path = write_pods(
        tmp_path / "pods.json",
        {"n1": {"0": {"pod": "nb", "namespace": "ds", "container": "jupyter", "class": "interactive"}}},
    )
    assert read_pod_resources(path, "n1") == {"0": PodInfo("nb", "ds", "jupyter", "interactive")}


def test_workload_field_is_read_and_written_but_never_a_label(
    tmp_path: Path, make_node: Callable[..., EmulatedNode]
) -> None:
    info = PodInfo("gang-worker-0", "runai-team-a", "pytorch", "training", "gang")
    path = tmp_path / "pods.json"
    path.write_text(pod_resources_document({"gpu-node-001": {0: info}}))
    assert read_pod_resources(path, "gpu-node-001") == {"0": info}
    assert info.pace_keys == ("runai-team-a/gang-worker-0", "workload:runai-team-a/gang")
    scrape = make_node(gpus=1, kubernetes=True, pod_resources=path).scrape()
    assert 'pod="gang-worker-0"' in scrape and '"gang"' not in scrape and "workload" not in scrape
    bad = write_pods(
        tmp_path / "bad.json", {"n1": {"0": {"pod": "p", "namespace": "n", "container": "c", "workload": 3}}}
    )
    with pytest.raises(PodResourcesError, match=r"nodes.n1.0.workload must be a string"):
        read_pod_resources(bad, "n1")


def test_kubernetes_and_hpc_mapping_compose(tmp_path: Path, make_node: Callable[..., EmulatedNode]) -> None:
    pods = write_pods(
        tmp_path / "pods.json", {"gpu-node-001": {"0": {"pod": "p", "namespace": "n", "container": "c"}}}
    )
    (tmp_path / "map").mkdir()
    (tmp_path / "map" / "0").write_text("9\n")
    node = make_node(gpus=1, kubernetes=True, pod_resources=pods, mapping_dir=tmp_path / "map")
    keys = [k for k, _ in labels_by_gpu(node.scrape(), "DCGM_FI_DEV_GPU_UTIL")["0"]]
    assert keys[-4:] == ["container", "hpc_job", "namespace", "pod"]


def test_one_version_of_the_file_is_parsed_once_for_every_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Run:ai lab's 500 nodes read the one file; a new version (written and renamed in) is read anew."""
    path = tmp_path / "pods.json"
    entry = {"pod": "p", "namespace": "n", "container": "c"}
    write_pods(path, {f"n{i}": {"0": entry} for i in range(3)})
    parsed: list[str] = []
    loads = kubernetes.json.loads
    monkeypatch.setattr(kubernetes.json, "loads", lambda text: parsed.append(text) or loads(text))
    assert [read_pod_resources(path, f"n{i}") for i in range(3)] == [{"0": PodInfo("p", "n", "c")}] * 3
    assert len(parsed) == 1
    replaced = tmp_path / "next.json"
    write_pods(replaced, {"n0": {"1": entry}})
    replaced.rename(path)
    assert read_pod_resources(path, "n0") == {"1": PodInfo("p", "n", "c")}
    assert len(parsed) == 2
