"""The drills' alert checks: each expected alert delivered firing in one episode and resolved after
the restore, and no other alert begun during the drill."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.alerts.listing import read_delivered
from lab.drill.checks import Expected, delivered_alerts, expected_alert_checks, nothing_else_check, unix
from lab.paths import PROJECT_ROOT

FAULT_AT = unix("2026-12-06T10:00:00.000Z")
RESTORED_AT = FAULT_AT + 120
XID = Expected("GPUXIDError", {"Hostname": "dgx-001", "gpu": "1"}, FAULT_AT)


def _alert(name: str, status: str, starts: str, **labels: str) -> dict[str, Any]:
    return {"status": status, "labels": {"alertname": name, **labels}, "startsAt": starts, "endsAt": ""}


def _xid(status: str, starts: str = "2026-12-06T10:00:14.5Z", gpu: str = "1") -> dict[str, Any]:
    return _alert("GPUXIDError", status, starts, Hostname="dgx-001", gpu=gpu, err_code="79")


def test_unix_reads_alertmanagers_nanoseconds_and_the_receivers_milliseconds() -> None:
    assert unix("2026-12-06T10:00:01.123456789Z") - FAULT_AT == pytest.approx(1.123456)
    assert unix("2026-12-06T10:00:01.5Z") - FAULT_AT == pytest.approx(1.5)
    assert unix("2026-12-06T10:00:01Z") - FAULT_AT == 1


def test_one_episode_delivered_then_resolved_passes_with_its_times() -> None:
    received = [
        (FAULT_AT + 25, _xid("firing")),
        (FAULT_AT + 85, _xid("firing")),  # the group's next flush repeats it: the same episode
        (RESTORED_AT + 70, _xid("resolved")),
    ]
    checks, times = expected_alert_checks([XID], RESTORED_AT, received)
    assert [c.passed for c in checks] == [True, True], checks
    assert times == [{"alert": "GPUXIDError", "labels": XID.labels, "delivered_s": 25, "resolved_s": 70}]


def test_an_alert_that_flaps_is_two_episodes_and_fails() -> None:
    received = [
        (FAULT_AT + 25, _xid("firing")),
        (FAULT_AT + 60, _xid("resolved")),
        (FAULT_AT + 90, _xid("firing", starts="2026-12-06T10:01:20Z")),
        (RESTORED_AT + 70, _xid("resolved")),
    ]
    checks, _ = expected_alert_checks([XID], RESTORED_AT, received)
    assert not checks[0].passed and checks[0].detail.startswith("2 episodes")


def test_a_resolution_before_the_restore_does_not_count_and_none_after_fails() -> None:
    received = [(FAULT_AT + 25, _xid("firing")), (FAULT_AT + 60, _xid("resolved"))]
    checks, times = expected_alert_checks([XID], RESTORED_AT, received)
    assert [c.passed for c in checks] == [True, False]
    assert times[0]["resolved_s"] is None


def test_an_alert_on_another_gpu_is_not_the_expected_one() -> None:
    checks, _ = expected_alert_checks([XID], RESTORED_AT, [(FAULT_AT + 25, _xid("firing", gpu="2"))])
    assert not checks[0].passed and checks[0].detail == "never delivered"


def test_nothing_else_passes_with_only_the_expected_and_standing_alerts() -> None:
    standing = {"alertname": "SlurmNodeWarning", "node": "dgx-003", "status": "drain"}
    received = [
        (FAULT_AT + 25, _xid("firing")),
        (FAULT_AT + 30, _alert("SlurmNodeWarning", "firing", "2026-12-06T08:00:00Z", node="dgx-003")),
    ]
    firing = [{**XID.labels, "alertname": "GPUXIDError", "err_code": "79"}, standing]
    check = nothing_else_check([XID], received, FAULT_AT, firing, [standing])
    assert check.passed, check.detail


def test_an_alert_begun_during_the_drill_fails_and_is_named() -> None:
    received = [
        (FAULT_AT + 40, _alert("TargetDown", "firing", "2026-12-06T10:00:30Z", instance="dgx-001:9400"))
    ]
    check = nothing_else_check([XID], received, FAULT_AT, [], [])
    assert not check.passed
    assert check.detail == 'TargetDown{instance="dgx-001:9400"}'


def test_an_alert_firing_in_prometheus_but_not_yet_delivered_fails_too() -> None:
    check = nothing_else_check([], [], FAULT_AT, [{"alertname": "SlurmDBDNotTakingRecords"}], [])
    assert not check.passed and "SlurmDBDNotTakingRecords" in check.detail


def test_an_alert_pending_before_the_drill_that_fires_during_it_is_the_labs_own() -> None:
    """The held node's SlurmNodeWarning (for: 5m) may fire mid-drill; its delivery adds `cluster`."""
    pending = {
        "alertname": "SlurmNodeWarning",
        "node": "dgx-003",
        "status": "drained$",
        "severity": "warning",
    }
    delivered = {
        "status": "firing",
        "labels": {**pending, "cluster": "aifactory"},
        "startsAt": "2026-12-06T10:00:40Z",
    }
    check = nothing_else_check([], [(FAULT_AT + 50, delivered)], FAULT_AT, [pending], [pending])
    assert check.passed, check.detail


def test_the_captured_drills_deliveries_pass_the_checks() -> None:
    """The receiver's lines of a real run (captures/drills-alerts-slurm-24.11.5), its first drill run:
    the storm's three GPUXIDErrors and the dbd-outage's SlurmDBDNotTakingRecords, each one episode,
    each resolved. (The capture holds later runs of both: over the whole, one episode per run.)"""
    capture = PROJECT_ROOT / "captures" / "drills-alerts-slurm-24.11.5"
    everything = delivered_alerts(read_delivered(capture / "notifications.jsonl"), 0)
    first_run_end = min(
        at
        for at, a in everything
        if a["labels"]["alertname"] == "SlurmDBDNotTakingRecords" and a["status"] == "resolved"
    )
    received = [(at, a) for at, a in everything if at <= first_run_end]
    start = json.loads((capture / "window.json").read_text())["start"]
    storm = [
        Expected("GPUXIDError", {"Hostname": "dgx-001", "gpu": "1", "err_code": "79"}, start),
        Expected("GPUXIDError", {"Hostname": "dgx-001", "gpu": "2", "err_code": "79"}, start),
        Expected("GPUXIDError", {"Hostname": "dgx-002", "gpu": "4", "err_code": "48"}, start),
    ]
    for expected in (storm, [Expected("SlurmDBDNotTakingRecords", {}, start)]):
        first = min(at for at, a in received if a["labels"]["alertname"] == expected[0].alert)
        checks, times = expected_alert_checks(expected, first + 1, received)
        assert all(c.passed for c in checks), checks
        assert all(0 < t["resolved_s"] < 120 for t in times), times  # type: ignore[operator]
    whole, _ = expected_alert_checks(storm[:1], start + 1, everything)
    assert not whole[0].passed and int(whole[0].detail.split()[0]) > 1, whole[0]
