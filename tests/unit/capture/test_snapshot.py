"""The journeys' PNG snapshots: each shipped one draws from its capture (every panel finds its series,
the alert was pending or firing in it), and the images docs/journeys.md shows are those snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.capture import snapshot
from lab.capture.snapshot import SHIPPED, Panel, Snapshot, SnapshotError
from lab.paths import PROJECT_ROOT


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
