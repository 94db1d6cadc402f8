"""The Run:ai construct in the lab: its emulator container, real Prometheus scraping every target,
the documented PromQL walk on the gpu-fault scenario, and each scenario's signature."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab import contract, promql
from lab.kinds import runai_lab
from lab.paths import BLUEPRINTS_DIR, lab_state_dir
from lab.runai.joins import walk
from lab.spec.runai_blueprint import RunaiBlueprint, load

from .conftest import run_lab, wait_for

pytestmark = pytest.mark.lab

BLUEPRINT = BLUEPRINTS_DIR / "runai.yaml"
PROMETHEUS = f"http://127.0.0.1:{contract.RUNAI_HOST_PORTS['prometheus']}"
# Simulated seconds per wall second. gpu-fault: its XID (at 15 min) comes after 90 s, so Prometheus
# (15 s interval) scrapes the victim's GPU with its pod label several times, as it would in real time;
# the walk joins on those samples. The other scenarios only need many steps quickly.
TIME_SCALE = {"gpu-fault": "10", "quota-exhaustion": "60", "preemption-storm": "60"}


def _up(scenario: str) -> None:
    run_lab(
        "up",
        "--blueprint",
        str(BLUEPRINT),
        "--scenario",
        scenario,
        "--time-scale",
        TIME_SCALE[scenario],
        "-q",
    )


@pytest.fixture(scope="module")
def runai() -> Iterator[RunaiBlueprint]:
    model = load(BLUEPRINT)
    # From nothing: a lab left by an aborted run would keep its emulator, clock and stale faults.
    run_lab("down", "--lab", model.name, "--purge")
    _up("gpu-fault")
    yield model
    run_lab("down", "--lab", model.name, "--purge")


# The emulator appends events as it steps; a reader can meet a line still being written, as a log
# shipper tailing the file would, so only whole lines count.
def _events_since(out: Path, offset: int) -> list[dict[str, object]]:
    with (out / "events.jsonl").open("rb") as handle:
        handle.seek(offset)
        return [json.loads(line) for line in handle if line.endswith(b"\n") and line.strip()]


def _end_of_whole_lines(out: Path) -> int:
    data = (out / "events.jsonl").read_bytes()
    return data.rfind(b"\n") + 1


def test_prometheus_scrapes_every_runai_target(runai: RunaiBlueprint) -> None:
    expected = {("runai", "runai:9590"), ("prometheus", "localhost:9090")}
    expected |= {(f"kai-{pool.name}", "runai:9590") for pool in runai.node_pools}
    expected |= {("dcgm", f"{node}:9400") for node in runai_lab.node_names(runai)}

    def healthy() -> set[tuple[str, str]]:
        return {
            (t["labels"]["job"], t["labels"]["instance"])
            for t in promql.targets(PROMETHEUS)
            if t["health"] == "up"
        }

    wait_for(lambda: healthy() >= expected, 60, "every Run:ai target up")


def test_documented_walk_finds_exactly_the_faulted_gpu_and_node(runai: RunaiBlueprint) -> None:
    faults = lab_state_dir(runai.name) / "runai" / "faults"
    # Dot files are the fault writer's temporaries, renamed into place.
    injected = wait_for(
        lambda: sorted(p for p in faults.rglob("[!.]*") if p.is_file()), 180, "the injected XID"
    )
    assert len(injected) == 1
    node, gpu = injected[0].parent.name, injected[0].name

    def answers() -> dict[tuple[str, str], list[promql.Series]]:
        """The walk for every failed workload (the baseline mix fails some without an XID)."""
        failed = promql.query(PROMETHEUS, walk("", "", []).steps[0][1])
        found = {}
        for workload in failed:
            key = (workload.labels["created_by_name"], workload.labels["namespace"])
            found[key] = promql.query(PROMETHEUS, walk(*key, []).combined)
        return found

    def faulted_answer() -> dict[tuple[str, str], list[promql.Series]]:
        return {key: rows for key, rows in answers().items() if rows}

    walks = wait_for(faulted_answer, 90, "a failed workload whose walk reaches an XID")
    assert len(walks) == 1, f"only the faulted workload's walk may return rows: {walks}"
    (workload, namespace), rows = next(iter(walks.items()))
    assert [(r.labels["Hostname"], r.labels["gpu"]) for r in rows] == [(node, gpu)]
    row = rows[0].labels
    assert row["err_code"] == "79" and row["namespace"] == namespace and row["pod"].startswith(workload)
    assert row["UUID"].startswith("GPU-") and row["nodepool"] in {pool.name for pool in runai.node_pools}


def test_gpu_fault_events_carry_the_core_v1_shape(runai: RunaiBlueprint) -> None:
    out = lab_state_dir(runai.name) / "runai"
    events = wait_for(
        lambda: [e for e in _events_since(out, 0) if e["reason"] == "BackOff"], 60, "the failed pod's BackOff"
    )
    event = events[0]
    assert {"involvedObject", "reason", "message", "type", "source", "count", "firstTimestamp"} <= set(event)
    assert event["type"] == "Warning"


def test_quota_exhaustion_shows_a_backlog_and_quota_reasons(runai: RunaiBlueprint) -> None:
    out = lab_state_dir(runai.name) / "runai"
    offset = _end_of_whole_lines(out)
    _up("quota-exhaustion")
    pending = 'count(kube_pod_status_phase{phase="Pending", namespace="runai-team-c"} == 1)'
    wait_for(
        lambda: [s for s in promql.query(PROMETHEUS, pending) if s.value >= 10], 120, "a pending backlog"
    )
    unschedulable = wait_for(
        lambda: [e for e in _events_since(out, offset) if e["reason"] == "Unschedulable"],
        60,
        "Unschedulable events",
    )
    assert any("NonPreemptibleOverQuota" in str(e["message"]) for e in unschedulable)


def test_preemption_storm_evicts_over_quota_workloads(runai: RunaiBlueprint) -> None:
    out = lab_state_dir(runai.name) / "runai"
    offset = _end_of_whole_lines(out)
    _up("preemption-storm")
    evicted = 'sum(kai_pod_group_evicted_pods_total{action="reclaim"})'
    wait_for(
        lambda: [s for s in promql.query(PROMETHEUS, evicted) if s.value >= 10], 120, "reclaim evictions"
    )
    evicts = wait_for(
        lambda: [e for e in _events_since(out, offset) if e["reason"] == "Evict"], 60, "Evict events"
    )
    assert all("was preempted by workload" in str(e["message"]) for e in evicts)
