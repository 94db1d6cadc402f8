"""Choosing drills, their report, and the probe's parsing of Slurm's and Prometheus' answers."""

import json
from pathlib import Path

import pytest

from lab.drill import suite
from lab.drill.checks import Check
from lab.drill.probe import DrillError, _gpus, _indices, _seconds
from lab.drill.record import Outcome


def test_groups_expand_in_run_order_and_names_are_kept_once() -> None:
    assert [d.name for d in suite.select(["all"])] == list(suite.DRILLS)
    fast = [d.name for d in suite.select(["fast"])]
    assert "node-loss" not in fast
    assert fast == [name for name in suite.DRILLS if name != "node-loss"]
    assert [d.name for d in suite.select(["node-loss", "restd-restart", "restd-restart"])] == [
        "restd-restart",
        "node-loss",
    ]


def test_an_unknown_drill_names_the_known_ones() -> None:
    with pytest.raises(DrillError, match=r"no drill 'reboot'.*controller-restart.*lab drill --list"):
        suite.select(["reboot"])


def test_every_drill_of_the_reliability_suite_exists() -> None:
    asked = {"controller-restart", "node-loss", "dbd-outage", "restd-restart", "shim-restart"}
    asked |= {"prometheus-restart", "mapping-dir-faults", "burst", "xid-storm"}
    assert set(suite.DRILLS) == asked


def test_an_outcome_passes_only_with_checks_all_passed_and_no_error() -> None:
    drill = suite.DRILLS["restd-restart"]
    assert Outcome(drill, [Check("a", True)], 1.0, 5.0).passed
    assert not Outcome(drill, [], 1.0, 5.0).passed
    assert not Outcome(drill, [Check("a", True), Check("b", False, "why")], 1.0, 5.0).passed
    assert not Outcome(drill, [Check("a", True)], 1.0, 5.0, error="boom").passed


def test_the_report_holds_every_check_and_the_recovery(tmp_path: Path) -> None:
    drill = suite.DRILLS["controller-restart"]
    outcomes = [
        Outcome(drill, [Check("jobs survived", True), Check("counters reset", False, "12 → 14")], 3.8, 70)
    ]
    suite.write_report(outcomes, tmp_path, "test machine")
    table = (tmp_path / "drills.md").read_text()
    assert "| `controller-restart` | slurmctld killed (SIGKILL)" in table
    assert "counters reset **(failed: 12 → 14)**" in table
    assert "| **fail** | 3.8 s |" in table
    raw = json.loads((tmp_path / "drills.json").read_text())
    assert raw[0]["passed"] is False and raw[0]["checks"][1]["detail"] == "12 → 14"
    lines = suite.report_lines(outcomes[0])
    assert lines[0].startswith("FAIL  controller-restart: recovered in 3.8 s")
    assert "      FAIL counters reset (12 → 14)" in lines


def test_gres_indices_and_prometheus_durations_parse() -> None:
    assert _indices("0-2,5") == [0, 1, 2, 5]
    assert _indices("7") == [7]
    assert _seconds("15s") == 15
    assert _seconds("1m30s") == 90
    assert _seconds("500ms") == 0.5
    assert _gpus("cpu=112,mem=2000000M,billing=112,gres/gpu=8") == 8
    assert _gpus("cpu=56,mem=1000000M,gres/gpu=4") == 4
    assert _gpus("") == 0  # a node no job holds prints no AllocTRES


def test_the_workload_submissions_are_read_from_its_log_after_the_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from lab.drill import probe as probe_module

    log = tmp_path / "workload.log"
    log.write_text("[   1.0s] submitted job 41: training, alice/llm-pretrain, 8 GPU on gpu\n")
    monkeypatch.setattr(probe_module.background, "log_file", lambda _lab: log)
    probe = probe_module.Probe(SimpleNamespace(name="default"), print)  # type: ignore[arg-type]
    probe.mark_workload_log()
    with log.open("a") as out:
        out.write("[  95.2s] submitted job 42: inference, grace/inference, 1 GPU on gpu\n")
        out.write("[  96.0s] cancelled job 41: it ran its planned 1h real\n")
        out.write("[ 120.7s] submitted job 43: interactive, heidi/inference, 1 GPU on debug\n")
    assert probe.workload_submissions() == ["42", "43"]


def test_the_command_lists_the_drills_and_refuses_an_unknown_one() -> None:
    import subprocess
    import sys

    def lab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "lab", *args], capture_output=True, text=True, check=False
        )

    listing = lab("drill", "--list")
    assert listing.returncode == 0
    assert all(name in listing.stdout for name in suite.DRILLS)
    unknown = lab("drill", "reboot-everything")
    assert unknown.returncode == 1
    assert "no drill 'reboot-everything'" in unknown.stderr
