"""The alert receiver over real HTTP on an ephemeral loopback port: a notification becomes one line,
a bad body gets 400 and writes nothing, a restart appends to the same file."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lab import alert_receiver
from tests.unit.loopback import serving

# Alertmanager v0.28.1's webhook payload: notify/webhook/webhook.go Message (version, groupKey,
# truncatedAlerts) over template/template.go Data (receiver, status, alerts, groupLabels, commonLabels,
# commonAnnotations, externalURL) and Alert (status, labels, annotations, startsAt, endsAt,
# generatorURL, fingerprint).
NOTIFICATION: dict[str, Any] = {
    "receiver": "lab",
    "status": "firing",
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "GpuXid", "cluster": "aifactory", "Hostname": "dgx-003", "gpu": "5"},
            "annotations": {"summary": "XID 79 on dgx-003 GPU 5"},
            "startsAt": "2026-12-03T10:40:00.000Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph?g0.expr=...",
            "fingerprint": "5b2c1e7d9a0f3c4e",
        }
    ],
    "groupLabels": {"alertname": "GpuXid", "cluster": "aifactory"},
    "commonLabels": {"alertname": "GpuXid", "cluster": "aifactory", "Hostname": "dgx-003", "gpu": "5"},
    "commonAnnotations": {"summary": "XID 79 on dgx-003 GPU 5"},
    "externalURL": "http://prometheus:9093",
    "version": "4",
    "groupKey": '{}:{alertname="GpuXid", cluster="aifactory"}',
    "truncatedAlerts": 0,
}


@contextmanager
def receiver(out: Path) -> Iterator[str]:
    with serving(alert_receiver.serve("127.0.0.1:0", out)) as url:
        yield url


def post(url: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(url + "/", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_notification_is_appended_as_one_line_with_the_receive_time(tmp_path: Path) -> None:
    out = tmp_path / "alerts" / "notifications.jsonl"
    with receiver(out) as url:
        status, _ = post(url, json.dumps(NOTIFICATION).encode())
    assert status == 200
    lines = out.read_text().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["notification"] == NOTIFICATION
    assert record["received_at"].endswith("Z") and record["received_at"][:2] == "20"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({**NOTIFICATION, "version": "3"}).encode(), "version '3'"),
        (json.dumps({k: v for k, v in NOTIFICATION.items() if k != "groupKey"}).encode(), "lacks groupKey"),
        (json.dumps({**NOTIFICATION, "alerts": {}}).encode(), "alerts is not a list"),
    ],
    ids=["not json", "an array", "another version", "no groupKey", "alerts not a list"],
)
def test_a_bad_body_gets_400_and_writes_nothing(tmp_path: Path, body: bytes, why: str) -> None:
    out = tmp_path / "notifications.jsonl"
    with receiver(out) as url:
        status, text = post(url, body)
    assert status == 400
    assert why in text
    assert not out.exists()


def test_a_restart_appends_to_the_same_file(tmp_path: Path) -> None:
    out = tmp_path / "notifications.jsonl"
    for status in ("firing", "resolved"):
        with receiver(out) as url:
            assert post(url, json.dumps({**NOTIFICATION, "status": status}).encode())[0] == 200
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["notification"]["status"] for r in records] == ["firing", "resolved"]


def test_concurrent_notifications_never_interleave(tmp_path: Path) -> None:
    out = tmp_path / "notifications.jsonl"
    big = {**NOTIFICATION, "alerts": NOTIFICATION["alerts"] * 200}  # ~80 kB a line
    with receiver(out) as url:
        threads = [
            threading.Thread(target=post, args=(url, json.dumps({**big, "groupKey": str(i)}).encode()))
            for i in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    keys = sorted(json.loads(line)["notification"]["groupKey"] for line in out.read_text().splitlines())
    assert keys == [str(i) for i in range(8)]


def test_ready_answers_get(tmp_path: Path) -> None:
    with receiver(tmp_path / "n.jsonl") as url, urllib.request.urlopen(url + "/-/ready", timeout=10) as r:
        assert r.status == 200
