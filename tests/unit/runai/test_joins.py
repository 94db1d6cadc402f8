"""The documented walk (failed workload -> pods -> GPUs -> nodes) on the real path's series: the
driver's ``runai_*`` and its DCGM targets before and after the gpu-fault scenario's XID, with
kube-state-metrics' series of the same pod from the captured gpu-fault run."""

from __future__ import annotations

import re
from pathlib import Path

from lab.exposition import parse_samples
from lab.kube.driver import runai_metrics
from lab.paths import PROJECT_ROOT
from lab.runai.joins import Row, Series, evaluate, walk

from ..kube.api_objects import VICTIM, VICTIM_POD, Cluster, busy

CAPTURE = PROJECT_ROOT / "captures" / "runai-kai-0.13.0" / "gpu-fault"
NAMESPACE = "runai-team-a"
XID = 79  # the blueprint's gpu-fault XID


def scrape(cluster: Cluster) -> list[Series]:
    """One scrape of the driver's /metrics and every DCGM target."""
    series = parse_samples(runai_metrics(cluster.look()))
    for node in cluster.dcgm.nodes.values():
        series += parse_samples(node.scrape())
    return series


def captured_kube_state_metrics() -> list[Series]:
    return parse_samples((CAPTURE / "metrics-kube-state-metrics.txt").read_text(encoding="utf-8"))


def test_the_walk_finds_the_failed_pod_its_gpu_and_node(tmp_path: Path) -> None:
    cluster = busy(tmp_path)
    running = scrape(cluster)
    node, gpu = cluster.fail_on_xid(VICTIM_POD, XID)
    failed = scrape(cluster) + captured_kube_state_metrics()
    uuid = cluster.dcgm.nodes[node].gpus[gpu].uuid
    expected = walk(
        VICTIM, NAMESPACE, [Row(VICTIM, NAMESPACE, VICTIM_POD, node, str(gpu), uuid, "default", "79")]
    )
    assert evaluate([running, failed], VICTIM, NAMESPACE) == expected.expected
    # The GPU is released: only the look back over the window still ties it to the pod.
    assert evaluate([failed], VICTIM, NAMESPACE) == ()


def test_the_walk_names_only_series_and_labels_the_real_path_emits(tmp_path: Path) -> None:
    emitted = scrape(busy(tmp_path)) + captured_kube_state_metrics()
    names = {name for name, _, _ in emitted}
    label_names = {label for _, labels, _ in emitted for label in labels}
    query = walk(VICTIM, NAMESPACE, [])
    text = query.combined + "\n".join(promql for _, promql in query.steps)
    assert set(re.findall(r"\b(?:runai|kube|kai|DCGM)_[A-Za-z0-9_]+\b", text)) <= names
    used = set(re.findall(r"(\w+)=", text))
    for listed in re.findall(r"(?:by|on|group_left) \(([^)]*)\)", text):
        used |= {label.strip() for label in listed.split(",") if label.strip()}
    assert used and used <= label_names, used - label_names
