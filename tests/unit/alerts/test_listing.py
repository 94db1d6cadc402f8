"""`lab alerts` output from a receiver file written by the receiver's own line format, and from
Prometheus' /api/v1/alerts objects."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lab import alert_receiver
from lab.alerts import listing
from tests.unit.test_alert_receiver import NOTIFICATION

PROMETHEUS = "http://127.0.0.1:9090"
# Prometheus 2.53's /api/v1/alerts: labels, annotations, state, activeAt, value.
API_ALERTS = [
    {
        "labels": {"alertname": "SlurmNodeDown", "node": "dgx-002"},
        "annotations": {},
        "state": "pending",
        "activeAt": "2026-12-03T10:41:00Z",
        "value": "1e+00",
    },
    {
        "labels": {"alertname": "GpuXid", "Hostname": "dgx-003", "gpu": "5"},
        "annotations": {},
        "state": "firing",
        "activeAt": "2026-12-03T10:40:00Z",
        "value": "7.9e+01",
    },
]


def write_sample(path: Path) -> None:
    resolved = {**NOTIFICATION, "status": "resolved"}
    resolved["alerts"] = [{**NOTIFICATION["alerts"][0], "status": "resolved"}]
    with path.open("wb") as stream:
        stream.write(alert_receiver.line_of(NOTIFICATION, datetime(2026, 12, 3, 10, 40, 12, 345000, UTC)))
        stream.write(alert_receiver.line_of(resolved, datetime(2026, 12, 3, 10, 45, 0, tzinfo=UTC)))


def test_deliveries_are_read_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "notifications.jsonl"
    write_sample(path)
    delivered = listing.read_delivered(path)
    assert [(d.received_at, d.status) for d in delivered] == [
        ("2026-12-03T10:45:00.000Z", "resolved"),
        ("2026-12-03T10:40:12.345Z", "firing"),
    ]
    assert delivered[1].group_labels == {"alertname": "GpuXid", "cluster": "aifactory"}
    assert delivered[1].alerts[0]["labels"]["gpu"] == "5"


def test_the_text_shows_both_lists_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "notifications.jsonl"
    write_sample(path)
    text = listing.as_text(
        listing.firing_from(API_ALERTS), listing.read_delivered(path), PROMETHEUS, path, 20
    )
    assert text.splitlines() == [
        "pending or firing now (http://127.0.0.1:9090/api/v1/alerts), newest first:",
        '  2026-12-03T10:41:00Z  pending  SlurmNodeDown  {node="dgx-002"}',
        '  2026-12-03T10:40:00Z  firing   GpuXid  {Hostname="dgx-003", gpu="5"}',
        f"delivered by Alertmanager ({path}), newest first:",
        '  2026-12-03T10:45:00.000Z  resolved receiver=lab  group {alertname="GpuXid", cluster="aifactory"}'
        "  1 alert(s)",
        '      resolved GpuXid  {Hostname="dgx-003", cluster="aifactory", gpu="5"}'
        "  startsAt 2026-12-03T10:40:00.000Z",
        '  2026-12-03T10:40:12.345Z  firing   receiver=lab  group {alertname="GpuXid", cluster="aifactory"}'
        "  1 alert(s)",
        '      firing   GpuXid  {Hostname="dgx-003", cluster="aifactory", gpu="5"}'
        "  startsAt 2026-12-03T10:40:00.000Z",
    ]


def test_nothing_fired_and_nothing_delivered_says_so(tmp_path: Path) -> None:
    path = tmp_path / "absent.jsonl"
    text = listing.as_text([], listing.read_delivered(path), PROMETHEUS, path, 20)
    assert "  none: no alerting rule is pending or firing" in text
    assert "  none yet: Alertmanager has sent no notification to the lab's receiver" in text


def test_the_limit_keeps_the_newest_and_says_how_many_more(tmp_path: Path) -> None:
    path = tmp_path / "notifications.jsonl"
    write_sample(path)
    text = listing.as_text(listing.firing_from(API_ALERTS), listing.read_delivered(path), PROMETHEUS, path, 1)
    assert "SlurmNodeDown" in text and "  … 1 more (--limit)" in text
    assert "10:45:00.000Z" in text and "10:40:12.345Z" not in text
    document = json.loads(listing.as_json(listing.firing_from(API_ALERTS), listing.read_delivered(path), 1))
    assert [f["name"] for f in document["firing"]] == ["SlurmNodeDown"]
    assert [d["status"] for d in document["delivered"]] == ["resolved"]


def test_a_line_the_receiver_did_not_write_is_named_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "notifications.jsonl"
    write_sample(path)
    with path.open("a") as stream:
        stream.write('{"received_at": "x"}\n')
    with pytest.raises(listing.AlertsError, match=rf"{path}:3: not a line of the alert receiver.*Fix:"):
        listing.read_delivered(path)
