"""The lab's fault record: what is in, when a window may start, and lines from several writers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from lab.attach import fault_record, faults
from lab.blueprint import slurm_blueprint as blueprint
from lab.dcgm.shim import write_injected_xid

LAB = "default"


def test_a_lab_without_faults_has_none_in_and_any_window_is_clean(isolated_state: Path) -> None:
    assert fault_record.read(LAB) == []
    assert fault_record.active(LAB) == []
    assert fault_record.settled_since(LAB, 30) == 0.0


def test_a_fault_in_is_active_until_cleared_and_no_window_is_clean_meanwhile(isolated_state: Path) -> None:
    fault_record.record(LAB, "xid", "dgx-003/5", "injected", "test")
    fault_record.record(LAB, "throttle", "dgx-001/2", "injected", "test")
    assert [e.key for e in fault_record.active(LAB)] == [("xid", "dgx-003/5"), ("throttle", "dgx-001/2")]
    assert fault_record.settled_since(LAB, 30) == float("inf")
    cleared = fault_record.record(LAB, "xid", "dgx-003/5", "cleared", "test")
    fault_record.record(LAB, "throttle", "dgx-001/2", "cleared", "test")
    assert fault_record.active(LAB) == []
    assert fault_record.settled_since(LAB, 30) >= cleared.at + 30


def test_a_settled_clear_needs_no_settling_time(isolated_state: Path) -> None:
    with fault_record.fault(LAB, "node-restart", "dgx-004", "test") as fault:
        assert [e.key for e in fault_record.active(LAB)] == [("node-restart", "dgx-004")]
        fault.settled = True
    last = fault_record.read(LAB)[-1]
    assert (last.action, last.settled) == ("cleared", True)
    assert fault_record.settled_since(LAB, 30) == last.at


def test_a_block_that_fails_still_records_the_clear_unsettled(isolated_state: Path) -> None:
    with pytest.raises(RuntimeError), fault_record.fault(LAB, "drill:burst", "lab", "lab drill") as fault:
        fault.settled = False
        raise RuntimeError("the drill broke")
    assert fault_record.active(LAB) == []
    assert not fault_record.read(LAB)[-1].settled


def test_an_injection_is_never_recorded_as_settled(isolated_state: Path) -> None:
    assert not fault_record.record(LAB, "xid", "dgx-003/5", "injected", "test", settled=True).settled


def test_lab_fault_xid_records_the_fault_and_its_clear(
    default_data: dict[str, Any], isolated_state: Path
) -> None:
    lab = blueprint.parse(default_data)
    faults.inject_xid(lab, "dgx-003", 5, 79, write_injected_xid)
    (event,) = fault_record.active(LAB)
    assert (event.kind, event.target, event.by, event.detail) == ("xid", "dgx-003/5", "lab fault", "XID 79")
    faults.inject_xid(lab, "dgx-003", 5, 0, write_injected_xid, by="lab drill xid-storm")
    assert fault_record.active(LAB) == []
    assert fault_record.read(LAB)[-1].by == "lab drill xid-storm"


def test_a_refused_fault_records_nothing(default_data: dict[str, Any], isolated_state: Path) -> None:
    with pytest.raises(faults.FaultError):
        faults.inject_xid(blueprint.parse(default_data), "dgx-009", 5, 79, write_injected_xid)
    assert fault_record.read(LAB) == []


def test_a_broken_line_names_the_file_the_line_and_the_fix(isolated_state: Path) -> None:
    fault_record.record(LAB, "xid", "dgx-003/5", "injected", "test")
    with fault_record.record_path(LAB).open("a") as stream:
        stream.write('{"at": "soon"\n')
    with pytest.raises(fault_record.FaultRecordError, match=r"faults\.jsonl:2: .*Fix: remove the line"):
        fault_record.read(LAB)


def _write_many(state: str, writer: int) -> None:
    import os

    os.environ["AIFACTORY_LAB_STATE"] = state
    for n in range(200):
        fault_record.record(LAB, "xid", f"dgx-00{writer}/{n % 8}", "injected", f"writer {writer}", "x" * 300)


def test_writers_in_several_processes_never_interleave_within_a_line(isolated_state: Path) -> None:
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(str(isolated_state), w)) for w in range(4)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    events = fault_record.read(LAB)  # raises on a torn line
    assert len(events) == 800
    assert {e.by for e in events} == {f"writer {w}" for w in range(4)}


def test_a_window_names_the_faults_that_reach_into_it(
    isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([100.0, 200.0, 300.0, 400.0, 500.0])
    monkeypatch.setattr(fault_record.time, "time", lambda: next(clock))
    fault_record.record(LAB, "node-restart", "dgx-004", "injected", "test")  # 100
    fault_record.record(LAB, "node-restart", "dgx-004", "cleared", "test", settled=True)  # 200
    fault_record.record(LAB, "xid", "dgx-003/5", "injected", "test")  # 300
    fault_record.record(LAB, "xid", "dgx-003/5", "cleared", "test")  # 400, settles by 430
    fault_record.record(LAB, "throttle", "dgx-001/2", "injected", "test")  # 500, still in

    def kinds(start: float, end: float) -> list[str]:
        return [e.kind for e in fault_record.within(LAB, start, end, settle_s=30)]

    assert kinds(0, 99) == []
    assert kinds(150, 160) == ["node-restart"]
    assert kinds(201, 299) == [], "a settled clear ends the fault at once"
    assert kinds(420, 450) == ["xid"], "an unsettled clear reaches settle_s further"
    assert kinds(431, 499) == []
    assert kinds(600, 700) == ["throttle"], "a fault still in reaches every later window"
