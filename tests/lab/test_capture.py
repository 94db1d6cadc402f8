"""`lab capture` and `lab dump` against the live lab: files with provenance, inventories, clean diff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.blueprint.slurm_blueprint import Blueprint

from .conftest import run_lab

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def capture_dir(default_lab: Blueprint, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("capture")
    run_lab("capture", "--lab", default_lab.name, "--duration", "15", "--interval", "15", "--out", str(out))
    return out


def test_every_target_gets_a_file_with_provenance(capture_dir: Path, default_lab: Blueprint) -> None:
    files = {path.relative_to(capture_dir).as_posix() for path in capture_dir.glob("*/*.prom")}
    assert {f"dcgm/{node}_9400.prom" for node in default_lab.nodes.names} <= files
    assert "prometheus/localhost_9090.prom" in files
    header = (capture_dir / "dcgm" / "dgx-001_9400.prom").read_text().splitlines()[:8]
    assert header[0] == "# aifactory-lab capture"
    assert any("emulates dcgm-exporter 4.5.3-4.8.2" in line for line in header)
    assert any("slurmctld=24.11.5-4+deb13u1" in line and "prometheus=2.53.3+ds1-2" in line for line in header)
    assert any(line.startswith("# started: ") and "every 15 s" in line for line in header)


def test_inventory_lists_families_labels_and_distinct_values(
    capture_dir: Path, default_lab: Blueprint
) -> None:
    found = json.loads((capture_dir / "dcgm" / "inventory.json").read_text())
    assert len(found) == 25
    util = found["DCGM_FI_DEV_GPU_UTIL"]
    assert util["type"] == "gauge"
    assert util["labels"]["Hostname"]["distinct"] == len(default_lab.nodes.names)
    assert util["labels"]["gpu"]["distinct"] == default_lab.nodes.shape.gpus


def test_dump_is_clean_on_a_fresh_capture(capture_dir: Path) -> None:
    result = run_lab("dump", "--capture", str(capture_dir), check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dcgm: clean" in result.stdout


def test_dump_fails_on_an_undocumented_family(capture_dir: Path, tmp_path: Path) -> None:
    signals = tmp_path / "signals"
    signals.mkdir()
    text = (Path(__file__).resolve().parents[2] / "signals" / "dcgm.md").read_text()
    (signals / "dcgm.md").write_text(text.replace("| `DCGM_FI_DEV_GPU_UTIL` |", "| GPU_UTIL removed |"))
    result = run_lab("dump", "--capture", str(capture_dir), "--signals", str(signals), check=False)
    assert result.returncode == 1
    assert "undocumented-family DCGM_FI_DEV_GPU_UTIL" in result.stdout
