"""`lab drill fast` on the default lab, through the command line as a user runs it: every drill but
node-loss (which waits out slurmd's 300 s timeout; RELIABILITY.md has the whole set, run with the live
workload). Here the workload is held off, as for every lab test (conftest.py), so the drills' own jobs
find GPUs at once; the shared checks then cover the drills' jobs, and each drill's alerts: those its
fault must cause delivered once and resolved (xid-storm's three GPUXIDErrors, dbd-outage's
SlurmDBDNotTakingRecords), no other alert begun during any drill."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.blueprint.slurm_blueprint import Blueprint
from lab.drill.suite import GROUPS

from .conftest import run_lab

pytestmark = pytest.mark.lab


def test_every_fast_drill_passes(default_lab: Blueprint, tmp_path: Path) -> None:
    result = run_lab("drill", "fast", "--lab", default_lab.name, "--out", str(tmp_path), check=False)
    report = json.loads((tmp_path / "drills.json").read_text())
    assert [d["drill"] for d in report] == GROUPS["fast"]
    failed = {d["drill"]: d for d in report if not d["passed"]}
    assert result.returncode == 0 and not failed, result.stdout + result.stderr
    assert all(d["recover_s"] is not None for d in report), report
    assert (tmp_path / "drills.md").read_text().count("| pass |") == len(GROUPS["fast"])
    told = {d["drill"]: [a["alert"] for a in d["alerts"]] for d in report if d["alerts"]}
    assert told == {"xid-storm": ["GPUXIDError"] * 3, "dbd-outage": ["SlurmDBDNotTakingRecords"]}, told
    for drill in report:  # BENCHMARKS.md: fault to delivered, restore to resolved
        for alert in drill["alerts"]:
            times = f"{alert['delivered_s']:.1f} s, {alert['resolved_s']:.1f} s"
            print(f"{drill['drill']}: {alert['alert']} {times}")
