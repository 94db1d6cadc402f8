"""The journeys' PNG snapshots: each shipped one draws from its capture (every panel finds its series,
the alert was pending or firing in it), and the images docs/journeys.md shows are those snapshots."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from lab.paths import PROJECT_ROOT

# docs/tools/ is the docs' own tooling, not a package: the module is loaded from its file.
_SPEC = importlib.util.spec_from_file_location(
    "journey_snapshots", PROJECT_ROOT / "docs/tools/journey_snapshots.py"
)
assert _SPEC is not None and _SPEC.loader is not None
snapshot = importlib.util.module_from_spec(_SPEC)
sys.modules["journey_snapshots"] = snapshot  # dataclasses look their module up while the file runs
_SPEC.loader.exec_module(snapshot)
SHIPPED, Panel, Snapshot, SnapshotError = (
    snapshot.SHIPPED,
    snapshot.Panel,
    snapshot.Snapshot,
    snapshot.SnapshotError,
)


@pytest.mark.parametrize("shot", SHIPPED, ids=lambda shot: shot.name)
def test_each_shipped_snapshot_draws_from_its_capture(shot: Snapshot, tmp_path: Path) -> None:
    capture = snapshot.CAPTURES / shot.capture
    low, high = shot.window or (-float("inf"), float("inf"))
    for panel in shot.panels:
        series = snapshot.load_series(capture, panel)
        assert any(low <= t <= high for _, samples in series for t, _ in samples), panel.title
    spans = snapshot.alert_spans(capture, shot.alert)
    assert any(start <= high and end >= low for start, end in spans["firing"] + spans["pending"])
    out = snapshot.render(shot, tmp_path / "shot.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_journeys_page_shows_every_shipped_snapshot() -> None:
    page = (PROJECT_ROOT / "docs" / "journeys.md").read_text()
    for shot in SHIPPED:
        image = f"img/journey-{shot.name}.png"
        assert f"]({image})" in page and (PROJECT_ROOT / "docs" / image).is_file(), image


def test_a_panel_that_matches_nothing_names_the_file_and_the_labels(tmp_path: Path) -> None:
    (tmp_path / "up.json").write_text(json.dumps([{"metric": {"job": "dcgm"}, "values": [[1.0, "1"]]}]))
    with pytest.raises(SnapshotError, match=r"up.json: no series with \{'job': 'slurm'\}"):
        snapshot.load_series(tmp_path, Panel("targets", "up", {"job": "slurm"}, ("job",), "up"))


def test_evaluations_become_spans_split_at_gaps() -> None:
    assert snapshot._runs([0.0, 15.0, 30.0, 120.0]) == [(0.0, 45.0), (120.0, 135.0)]


def test_a_panel_matches_label_values_as_promql_regular_expressions(tmp_path: Path) -> None:
    pods = ["journey-throttle-master-0", "journey-throttle-worker-0", "train-00001-ftgr7"]
    document = [{"metric": {"pod": pod, "gpu": "0"}, "values": [[1.0, "1980"]]} for pod in pods]
    (tmp_path / "dcgm-sm-clock.json").write_text(json.dumps(document))
    panel = Panel("clocks", "dcgm-sm-clock", {"pod": "journey-throttle-.*"}, ("pod",), "MHz")
    assert [legend for legend, _ in snapshot.load_series(tmp_path, panel)] == [
        "pod=journey-throttle-master-0",
        "pod=journey-throttle-worker-0",
    ]
    whole = Panel("clocks", "dcgm-sm-clock", {"pod": "journey-throttle"}, ("pod",), "MHz")
    with pytest.raises(SnapshotError):
        snapshot.load_series(tmp_path, whole)  # in full, as =~: a prefix alone matches nothing


def _shipped(name: str) -> Snapshot:
    return next(shot for shot in SHIPPED if shot.name == name)


def test_the_runai_throttled_snapshot_shows_only_the_braked_gpu_slow_while_the_alert_fires() -> None:
    """Its caption: the braked GPU at 990 MHz, its peers on both replicas at 1980 when they compute."""
    shot = _shipped("throttled-runai")
    capture = snapshot.CAPTURES / shot.capture
    firing = snapshot.alert_spans(capture, shot.alert)["firing"]
    highest: dict[str, float] = {}
    for legend, samples in snapshot.load_series(capture, shot.panels[0]):
        during = [v for t, v in samples if any(start <= t <= end for start, end in firing)]
        highest[legend] = max(during)
    assert highest == {
        "pod=journey-throttle-master-0, gpu=2": 1980.0,
        "pod=journey-throttle-master-0, gpu=3": 990.0,
        "pod=journey-throttle-worker-0, gpu=4": 1980.0,
        "pod=journey-throttle-worker-0, gpu=5": 1980.0,
    }


def test_the_runai_gpu_fault_snapshot_shows_the_pod_gone_from_its_gpu_before_the_alert_fires() -> None:
    """Its caption: the pod's series end before the first XID sample, which has no pod; the alert
    fires after that from the latch; the node counts one healthy GPU fewer."""
    shot = _shipped("gpu-fault-runai")
    capture = snapshot.CAPTURES / shot.capture
    ((_, held),) = snapshot.load_series(capture, shot.panels[0])
    xids = dict(snapshot.load_series(capture, shot.panels[1]))
    first_xid = xids["err_code=79"][0][0]
    assert held[-1][0] < first_xid and all(
        value == 0 for _, value in xids["err_code=0, pod=train-00001-dbw9g"]
    )
    (firing,) = snapshot.alert_spans(capture, shot.alert)["firing"]
    assert first_xid <= firing[0]
    ((_, healthy),) = snapshot.load_series(capture, shot.panels[3])
    assert [value for moment, value in healthy if moment < first_xid][-1] == 8 and healthy[-1][1] == 7


def test_a_line_holds_each_sample_a_scrape_and_stops_where_its_series_was_absent() -> None:
    broken = snapshot._broken_at_gaps([(0.0, 1.0), (15.0, 1.0), (45.0, 2.0)])  # the scrape of 30 s missed
    assert broken[:3] == [(0.0, 1.0), (15.0, 1.0), (30.0, 1.0)] and broken[4:6] == [(45.0, 2.0), (60.0, 2.0)]
    assert [t for t, v in broken if v != v] == [30.0, 60.0]  # NaN: the line breaks there


def test_the_runai_starved_snapshot_shows_two_reclaims_counted_before_the_alert_fires() -> None:
    """Its caption: KAI's counter for the 2-replica gang goes 4, then 8 (2 x 2 per reclaim), and the
    alert fires after the second reclaim."""
    shot = _shipped("starved-runai")
    capture = snapshot.CAPTURES / shot.capture
    ((_, counted),) = snapshot.load_series(capture, shot.panels[1])
    assert sorted({value for _, value in counted}) == [4.0, 8.0]
    second = shot.faults[1][0]
    (firing,) = snapshot.alert_spans(capture, shot.alert)["firing"]
    assert second < firing[0] and next(t for t, v in counted if v == 8.0) <= firing[0]
