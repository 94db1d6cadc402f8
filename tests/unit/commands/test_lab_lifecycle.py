"""`lab up` takes the options of the blueprint's kind: a flag only the other kind reads is refused,
naming the flag and the fix, before anything is built; each kind gets its own options."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.kinds import RunaiUpOptions, SlurmUpOptions
from lab.kinds.runai_lab import RunaiKind
from lab.kinds.slurm_lab import SlurmKind
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT

RUNAI = str(BLUEPRINTS_DIR / "runai.yaml")


@pytest.fixture
def ups(monkeypatch: pytest.MonkeyPatch, isolated_state: Path) -> list[Any]:
    """The options each kind's `up` was called with (nothing is brought up); run from the project."""
    monkeypatch.chdir(PROJECT_ROOT)
    called: list[Any] = []

    def up(_kind: object, _model: object, _source: Path, options: Any, _progress: object) -> Any:
        called.append(options)
        return SimpleNamespace(endpoints={"prometheus": "http://127.0.0.1:9090"})

    monkeypatch.setattr(SlurmKind, "up", up)
    monkeypatch.setattr(RunaiKind, "up", up)
    return called


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["up", "--quiet", *argv])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("argv", "flags"),
    [
        (["--scenario", "gpu-fault"], "--scenario is"),
        (["--time-scale", "2"], "--time-scale is"),
        (["--seed", "1", "--scenario", "baseline"], "--scenario, --seed are"),
    ],
)
def test_a_runai_flag_with_a_slurm_blueprint_is_refused(ups: list[Any], argv: list[str], flags: str) -> None:
    code, output = invoke(*argv)
    assert code == 1
    assert f"{flags} for Run:ai blueprints; blueprints/default.yaml is a Slurm blueprint" in output
    assert "Fix: drop" in output and "--blueprint" in output
    assert ups == [], "refused before anything is built"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--hosts", "systemd"], "--hosts"),
        (["--hosts", "container"], "--hosts"),
        (["--no-workload"], "--no-workload"),
        (["--workload"], "--workload"),
        (["--no-exporter"], "--no-exporter"),
        (["--submit-via", "slurmrestd"], "--submit-via"),
        (["--pyslurm-source", "/x.tar.gz"], "--pyslurm-source"),
        (["--exporter-source", "/x.tar.gz"], "--exporter-source"),
    ],
)
def test_a_slurm_flag_with_a_runai_blueprint_is_refused(ups: list[Any], argv: list[str], flag: str) -> None:
    code, output = invoke("--blueprint", RUNAI, *argv)
    assert code == 1
    assert f"{flag} is for Slurm blueprints; blueprints/runai.yaml is a Run:ai blueprint" in output
    assert ups == []


def test_a_slurm_blueprint_gets_its_own_options(ups: list[Any]) -> None:
    code, output = invoke(
        "--no-exporter", "--submit-via", "slurmrestd", "--hosts", "container", "--no-workload"
    )
    assert code == 0, output
    (options,) = ups
    assert isinstance(options, SlurmUpOptions)
    assert (options.exporter, options.submit_via, options.hosts, options.workload) == (
        False,
        "slurmrestd",
        "container",
        False,
    )
    assert "prometheus: http://127.0.0.1:9090" in output


def test_a_runai_blueprint_gets_its_own_options(ups: list[Any]) -> None:
    code, output = invoke("-b", RUNAI, "--scenario", "gpu-fault", "--time-scale", "2", "--seed", "7")
    assert code == 0, output
    assert ups == [RunaiUpOptions(build=ups[0].build, scenario="gpu-fault", time_scale=2.0, seed=7)]


def test_defaults_of_the_other_kind_are_not_flags_given(ups: list[Any]) -> None:
    assert invoke()[0] == 0
    assert invoke("--blueprint", RUNAI)[0] == 0
    assert [type(options) for options in ups] == [SlurmUpOptions, RunaiUpOptions]


def test_an_unknown_submit_way_is_refused_before_anything_is_built(ups: list[Any]) -> None:
    code, output = invoke("--submit-via", "ssh")
    assert code == 1 and "--submit-via 'ssh': use one of auto, pyslurm, slurmrestd" in output
    assert ups == []
