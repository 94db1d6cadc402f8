"""Every emitted name is in the sourced table: scrape the served construct on 127.0.0.1, port 0."""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.exposition import parse_samples
from lab.runai.http_server import RunningConstruct
from lab.runai.k8s_events import EVENT_SOURCES
from lab.runai.sourced_families import ALL_FAMILIES, KSM_FAMILIES, SOURCES

from .helpers import fresh

NEVER = 1e9  # wall seconds per step: the serving thread never steps; the test steps under the lock


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningConstruct]:
    run = fresh(tmp_path, "preemption-storm")
    construct = RunningConstruct(run.sim, "127.0.0.1:0", wall_seconds_per_step=NEVER)
    try:
        with construct.lock:
            run.sim.run(150)
        yield construct
    finally:
        construct.stop()


def get(address: str, path: str) -> tuple[int, str, str]:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        conn.close()


def check_exposition(text: str) -> set[str]:
    families: set[str] = set()
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    for name, labels, _ in parse_samples(text):
        base = re.sub(r"_(bucket|sum|count)$", "", name) if name not in ALL_FAMILIES else name
        assert base in ALL_FAMILIES, f"{name} is not in lab.runai.sourced_families (signals/runai.md)"
        spec = ALL_FAMILIES[base]
        allowed = set(spec.labels) | ({"le"} if name.endswith("_bucket") else set())
        assert set(labels) <= allowed, f"{name}: unsourced labels {set(labels) - allowed}"
        if spec.type != "histogram":
            assert set(labels) == set(spec.labels), (
                f"{name}: missing documented labels {set(spec.labels) - set(labels)}"
            )
        families.add(base)
    for name in families:
        assert helps[name] == ALL_FAMILIES[name].help
        assert types[name] == ALL_FAMILIES[name].type
    return families


def test_every_family_and_label_is_sourced(served: RunningConstruct) -> None:
    status, content_type, text = get(served.address, "/metrics")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    families = check_exposition(text)
    for pool in ("default", "inference"):
        status, _, kai = get(served.address, f"/kai/{pool}/metrics")
        assert status == 200
        families |= check_exposition(kai)
    # Everything in the table is emitted by this busy run (the table holds nothing unused).
    assert families == set(ALL_FAMILIES)
    assert {spec.source for spec in ALL_FAMILIES.values()} <= set(SOURCES)


def test_ksm_label_order_is_kube_state_metrics_own(served: RunningConstruct) -> None:
    _, _, text = get(served.address, "/metrics")
    line = next(line for line in text.splitlines() if line.startswith("kube_pod_info{"))
    order = re.findall(r'([a-z_]+)="', line)
    assert order == list(next(f for f in KSM_FAMILIES if f.name == "kube_pod_info").labels)


def test_dcgm_targets_serve_pod_labels(served: RunningConstruct) -> None:
    labelled = 0
    for address in served.dcgm_addresses.values():
        status, _, text = get(address, "/metrics")
        assert status == 200
        labelled += sum(
            1 for _, labels, _ in parse_samples(text) if labels.get("namespace", "").startswith("runai-")
        )
    assert labelled > 0


def test_api_shapes(served: RunningConstruct) -> None:
    status, _, body = get(
        served.address, "/api/v1/workloads/telemetry?telemetryType=WORKLOADS_COUNT&groupBy=Phase"
    )
    assert status == 200
    doc = json.loads(body)
    assert set(doc) == {"type", "timestamp", "values"} and doc["type"] == "WORKLOADS_COUNT"
    assert all(isinstance(v["value"], str) and v["groups"][0]["key"] == "Phase" for v in doc["values"])
    for kind in ("ALLOCATED_GPUS", "IDLE_ALLOCATED_GPUS", "FREE_GPUS"):
        status, _, body = get(
            served.address, f"/api/v1/nodes/telemetry?telemetryType={kind}&groupBy=Nodepool"
        )
        assert status == 200
        assert {g["value"] for v in json.loads(body)["values"] for g in v["groups"]} == {
            "default",
            "inference",
        }
    status, _, body = get(
        served.address, "/api/v1/workloads/telemetry?telemetryType=PENDING_TIME_DISTRIBUTION"
    )
    assert status == 501 and "not emulated" in json.loads(body)["message"]
    status, _, body = get(served.address, "/api/v1/workloads/telemetry")
    assert status == 400 and "telemetryType" in json.loads(body)["message"]
    workload = next(w for w in served.sim.workloads.values() if w.evictions)
    status, _, body = get(served.address, f"/api/v1/workloads/{workload.uid}/events?limit=500")
    events = json.loads(body)["events"]
    assert {"Evict", "Scheduled", "Bound", "Killing"} <= {e["reason"] for e in events}
    for event in events:
        assert set(event) == {
            "createdAt",
            "id",
            "type",
            "clusterId",
            "message",
            "reason",
            "source",
            "involvedObject",
        }
        assert set(event["involvedObject"]) == {"uid", "kind", "name", "namespace"}


def test_event_reasons_and_shape_are_sourced(tmp_path: Path) -> None:
    for scenario in ("preemption-storm", "gpu-fault", "quota-exhaustion"):
        run = fresh(tmp_path / scenario, scenario)
        run.sim.run(120)
        for line in run.events:
            event = json.loads(line)
            component = (
                "scheduler"
                if event["source"]["component"] == "kai-scheduler"
                else event["source"]["component"]
            )
            assert (component, event["reason"]) in EVENT_SOURCES
            assert event["metadata"]["name"].startswith(event["involvedObject"]["name"] + ".")
            assert event["count"] >= 1 and event["type"] in ("Normal", "Warning")
            assert event["reportingComponent"] == event["source"]["component"]


def test_scheduler_log_lines_are_kai_shaped(tmp_path: Path) -> None:
    run = fresh(tmp_path, "quota-exhaustion")
    run.sim.run(120)
    pattern = re.compile(
        r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\t\x1b\[3\dm(INFO|WARN|ERROR)\x1b\[0m\t"
        r"\[\x1b\[3\dm[0-9a-f-]{36}\x1b\[0m\] (\[\x1b\[3\dm(allocate|reclaim|preempt)\x1b\[0m\] )?\S"
    )
    lines = run.logs["default"]
    assert lines and all(pattern.match(line) for line in lines)
    assert any("Start scheduling ..." in line for line in lines)
    assert any("Could not allocate resources for job: <runai-team-c/pg-build-" in line for line in lines)
