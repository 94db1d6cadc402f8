"""`lab fault throttle` and `lab fault pcie`: validated like `lab fault xid`, written where the shim reads
it, recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.attach import fault_record, faults
from lab.blueprint import slurm_blueprint as blueprint
from lab.blueprint.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT
from lab.blueprint.runai_blueprint import load as load_runai
from lab.dcgm.shim import CAUSES, MAX_REPLAYS_PER_MIN, write_pcie_replays, write_throttle


def test_a_throttle_is_written_atomically_where_the_shim_reads_it_and_recorded(
    default_data: dict[str, Any], isolated_state: Path
) -> None:
    lab = blueprint.parse(default_data)
    path = faults.inject_throttle(lab, "dgx-001", 3, "power-brake", CAUSES, write_throttle)
    assert path == isolated_state / "default" / "shared" / "throttle" / "dgx-001" / "3"
    assert path.read_text() == "power-brake\n"
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["3"], "no temporary file left behind"
    (event,) = fault_record.active("default")
    assert (event.kind, event.target, event.detail) == ("throttle", "dgx-001/3", "power-brake")
    faults.inject_throttle(lab, "dgx-001", 3, "clear", CAUSES, write_throttle, by="a test")
    assert not path.exists()
    assert fault_record.active("default") == []
    assert fault_record.read("default")[-1].by == "a test"


def test_clearing_a_gpu_that_is_not_throttled_is_no_error(
    default_data: dict[str, Any], isolated_state: Path
) -> None:
    faults.inject_throttle(blueprint.parse(default_data), "dgx-002", 0, "clear", CAUSES, write_throttle)
    assert fault_record.active("default") == []


@pytest.mark.parametrize(
    ("node", "gpu", "cause", "message"),
    [
        ("dgx-009", 0, "thermal", "has no node"),
        ("dgx-001", 8, "thermal", "use 0..7"),
        ("dgx-001", -1, "thermal", "use 0..7"),
        ("dgx-001", 0, "hot", "use one of power-brake, thermal, power-cap, or clear"),
    ],
)
def test_bad_throttles_name_what_is_allowed_and_record_nothing(
    default_data: dict[str, Any], isolated_state: Path, node: str, gpu: int, cause: str, message: str
) -> None:
    with pytest.raises(faults.FaultError, match=message):
        faults.inject_throttle(blueprint.parse(default_data), node, gpu, cause, CAUSES, write_throttle)
    assert not (isolated_state / "default" / "shared" / "throttle").exists()
    assert fault_record.read("default") == []


def test_a_runai_lab_throttle_goes_where_its_container_reads_it(isolated_state: Path) -> None:
    lab = load_runai(DEFAULT_RUNAI_BLUEPRINT)
    pool = lab.node_pools[0]
    node = pool.node_names()[0]
    path = faults.inject_throttle(lab, node, pool.gpus_per_node - 1, "thermal", CAUSES, write_throttle)
    assert path == isolated_state / lab.name / "runai" / "throttle" / node / str(pool.gpus_per_node - 1)
    assert path.read_text() == "thermal\n"
    with pytest.raises(faults.FaultError, match=f"use 0..{pool.gpus_per_node - 1}"):
        faults.inject_throttle(lab, node, pool.gpus_per_node, "thermal", CAUSES, write_throttle)
    with pytest.raises(faults.FaultError, match="has no node 'gpu-node-001'"):
        faults.inject_throttle(lab, "gpu-node-001", 0, "thermal", CAUSES, write_throttle)
    faults.inject_throttle(lab, node, pool.gpus_per_node - 1, "clear", CAUSES, write_throttle)
    assert fault_record.active(lab.name) == []


def test_pcie_replays_are_written_where_the_shim_reads_them_and_recorded(
    default_data: dict[str, Any], isolated_state: Path
) -> None:
    lab = blueprint.parse(default_data)
    path = faults.inject_pcie_replays(lab, "dgx-002", 5, 60, MAX_REPLAYS_PER_MIN, write_pcie_replays)
    assert path == isolated_state / "default" / "shared" / "pcie" / "dgx-002" / "5"
    assert path.read_text() == "60\n"
    (event,) = fault_record.active("default")
    assert (event.kind, event.target, event.detail) == ("pcie", "dgx-002/5", "60/min")
    faults.inject_pcie_replays(lab, "dgx-002", 5, 0, MAX_REPLAYS_PER_MIN, write_pcie_replays)
    assert not path.exists()
    assert fault_record.active("default") == []


@pytest.mark.parametrize(
    ("gpu", "per_minute", "message"),
    [(8, 60, "use 0..7"), (0, -1, "out of range"), (0, 10**6, r"1\.\.100000")],
)
def test_bad_pcie_faults_name_what_is_allowed_and_record_nothing(
    default_data: dict[str, Any], isolated_state: Path, gpu: int, per_minute: int, message: str
) -> None:
    lab = blueprint.parse(default_data)
    with pytest.raises(faults.FaultError, match=message):
        faults.inject_pcie_replays(lab, "dgx-001", gpu, per_minute, MAX_REPLAYS_PER_MIN, write_pcie_replays)
    assert not (isolated_state / "default" / "shared" / "pcie").exists()
    assert fault_record.read("default") == []
