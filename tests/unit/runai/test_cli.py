"""``lab runai serve``: bad input fails with exit 1 and a message naming the flag or file, no trace."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.runai.cli import app


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--scenario", "meltdown"], "--scenario 'meltdown' is unknown"),
        (["--time-scale", "0"], "--time-scale 0.0 must be > 0"),
        (["--address", "localhost"], "--address: listen address 'localhost' must be <HOST>:<PORT>"),
        (["--dcgm-address", "127.0.0.1:65530"], "--dcgm-address: 8 nodes from port 65530 run past 65535"),
        (["--blueprint", "/nonexistent/runai.yaml"], "/nonexistent/runai.yaml: cannot read Run:ai blueprint"),
    ],
)
def test_bad_input_exits_1_with_a_clear_message(args: list[str], needle: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "--out", str(tmp_path), *args])
    assert result.exit_code == 1
    assert needle in result.output
    assert "Traceback" not in result.output


def test_bad_blueprint_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\n")
    result = CliRunner().invoke(app, ["serve", "--blueprint", str(path), "--out", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{path}:" in result.output and "cluster_id: required field is missing" in result.output


def test_serve_runs_a_fixed_number_of_steps_and_writes_events_and_logs(tmp_path: Path) -> None:
    args = [
        "serve",
        "--address",
        "127.0.0.1:0",
        "--dcgm-address",
        "127.0.0.1:0",
        "--scenario",
        "gpu-fault",
        "--time-scale",
        "1e6",
        "--steps",
        "100",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "/kai/default/metrics" in result.output
    assert '"reason":"BackOff"' in (tmp_path / "events.jsonl").read_text()
    assert "Start scheduling ..." in (tmp_path / "kai-scheduler-default.log").read_text()
    assert (tmp_path / "faults" / "dgx-001").is_dir()
