"""`lab drill fast` through the command line as a user runs it, on a lab of its own: the default
blueprint as lab "drills" (tests.lab_groups), so that its faults touch no other module's lab and it runs
beside them. Every drill but node-loss (which waits out slurmd's 300 s timeout; RELIABILITY.md has the
whole set, run with the live workload on the default lab). There is no workload here, as for every lab
test (conftest.py); instead, every GPU in service is busy when the run starts (one 8-GPU job per node,
FILLER_S long), as on a busy lab, so the first drill that needs GPUs must make room as an operator would
(lab.drill.room: a reservation, then its node's jobs end). The shared checks then cover the drills'
jobs, and each drill's alerts: those its fault must cause delivered once and resolved (xid-storm's three
GPUXIDErrors, dbd-outage's SlurmDBDNotTakingRecords), no other alert begun during any drill. One run,
three tests: what the run must show is checked in parts, so that a failure names its part (and xdist,
which gives a worker a second scope while its first has two tests or fewer left, does not queue another
lab's behind this one's long run, tests.lab_groups)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import testinfra

from lab import contract
from lab.blueprint.slurm_blueprint import Blueprint, load
from lab.drill.room import PREFIX
from lab.drill.suite import DRILLS, GROUPS

from .conftest import derived_blueprint, run_lab, submit_gpu_job

pytestmark = pytest.mark.lab

# The fillers outlast the first drill, restd-restart (14 s with its checks on the live lab, 2026-12-07),
# which needs no GPU, so that the next, shim-restart, finds every GPU taken and waits in its reservation.
FILLER_S = 60
LAB = "drills"


@dataclass(frozen=True)
class DrillRun:
    controller: testinfra.host.Host
    fillers: list[str]  # the busy lab's job ids
    result: subprocess.CompletedProcess[str]
    report: list[dict[str, Any]]  # drills.json
    out: Path


@pytest.fixture(scope="module")
def drill_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Blueprint]:
    path = derived_blueprint(tmp_path_factory.mktemp(LAB) / f"{LAB}.yaml", LAB)
    run_lab("down", "--lab", LAB, "--purge", check=False)
    run_lab("up", "--blueprint", str(path), "--no-workload")
    yield load(path)
    run_lab("down", "--lab", LAB, "--purge")


@pytest.fixture(scope="module")
def drill_run(drill_lab: Blueprint, tmp_path_factory: pytest.TempPathFactory) -> DrillRun:
    """`lab drill fast` once, on a lab whose GPUs in service are all busy when it starts."""
    controller = testinfra.get_host(f"docker://{contract.container_name(LAB, 'controller')}")
    # In service and free: sinfo's state exactly idle (`-t idle` would also list the drained idle node).
    nodes = controller.check_output("sinfo -h -N -o '%N %T'").splitlines()
    serving = sorted({line.split()[0] for line in nodes if line.split()[1] == "idle"})
    fillers = [submit_gpu_job(controller, f"--gres=gpu:8 --nodelist={n}", FILLER_S) for n in serving]
    out = tmp_path_factory.mktemp("drill-out")
    result = run_lab("drill", "fast", "--lab", LAB, "--out", str(out), check=False)
    report = json.loads((out / "drills.json").read_text())
    return DrillRun(controller, fillers, result, report, out)


def test_every_fast_drill_passes(drill_run: DrillRun) -> None:
    report, result = drill_run.report, drill_run.result
    assert [d["drill"] for d in report] == GROUPS["fast"]
    failed = {d["drill"]: d for d in report if not d["passed"]}
    assert result.returncode == 0 and not failed, result.stdout + result.stderr
    assert all(d["recover_s"] is not None for d in report), report
    assert (drill_run.out / "drills.md").read_text().count("| pass |") == len(GROUPS["fast"])


def test_each_drill_is_told_by_the_alerts_its_fault_explains(drill_run: DrillRun) -> None:
    told = {d["drill"]: [a["alert"] for a in d["alerts"]] for d in drill_run.report if d["alerts"]}
    assert told == {"xid-storm": ["GPUXIDError"] * 3, "dbd-outage": ["SlurmDBDNotTakingRecords"]}, told
    for drill in drill_run.report:  # BENCHMARKS.md: fault to delivered, restore to resolved
        for alert in drill["alerts"]:
            times = f"{alert['delivered_s']:.1f} s, {alert['resolved_s']:.1f} s"
            print(f"{drill['drill']}: {alert['alert']} {times}")


def test_a_busy_lab_makes_room_by_reservation_and_its_jobs_run_to_their_end(drill_run: DrillRun) -> None:
    report, controller = drill_run.report, drill_run.controller
    first = next(d for d in report if d["drill"] == "shim-restart")
    (note,) = [n for n in first["notes"] if n.startswith("reserved ")]
    waited = float(note.rsplit("after ", 1)[1].removesuffix(" s"))
    assert waited > 0, f"{note}: the fillers ({FILLER_S} s) ended before shim-restart began"
    reserved = {d["drill"] for d in report if any(n.startswith("reserved ") for n in d["notes"])}
    assert reserved == {name for name in GROUPS["fast"] if DRILLS[name].room}, reserved
    assert PREFIX not in controller.check_output("scontrol show reservation"), "a drill's reservation left"
    states = controller.check_output(f"sacct -X -n -P -j {','.join(drill_run.fillers)} -o State").split()
    assert states == ["COMPLETED"] * len(drill_run.fillers), "the busy lab's jobs ran to their end"
