"""`lab churn` end to end against a fake Prometheus (fake_prometheus.py) and a sacct file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lab.churn.queries import queries
from lab.commands.churn import app
from tests.unit.churn.fake_prometheus import Scenario, serve

T0 = 1796032800  # 2026-11-30T10:00:00Z
WINDOW = ["--start", "2026-11-30T10:00:00Z", "--end", "2026-11-30T10:10:00Z", "--step", "15s"]
# Job 5 holds GPU 0 from T0+100 s to T0+290 s; its label is visible from T0+105 s to T0+300 s.
SACCT = f"5|{T0 + 100}|{T0 + 290}|COMPLETED|billing=14,cpu=14,gres/gpu=1,mem=250000M,node=1\n"


def run(tmp_path: Path, url: str, *extra: str, sacct_text: str = SACCT) -> tuple[int, str, dict[str, Any]]:
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(sacct_text)
    out = tmp_path / "report"
    argv = ["--prometheus", url, "--sacct", str(sacct), "--out", str(out), "--quiet", *WINDOW, *extra]
    result = CliRunner().invoke(app, argv)
    document = json.loads((out / "churn.json").read_text()) if (out / "churn.json").exists() else {}
    return result.exit_code, result.output, document


def scenario(**jobs_on_gpus: list[str]) -> Scenario:
    mapping = {int(gpu.removeprefix("gpu")): ids for gpu, ids in jobs_on_gpus.items()}
    return Scenario(mapping=[(T0 + 105, T0 + 300, mapping)])


def test_a_job_on_one_gpu_is_counted_and_the_bound_holds(tmp_path: Path) -> None:
    with serve(scenario(gpu0=["5"])) as url:
        code, output, document = run(tmp_path, url, "--time-scale", "60")
    assert code == 0, output
    assert "bound holds" in output
    families = {row["family"]: row for row in document["families"]}
    util = families["DCGM_FI_DEV_GPU_UTIL"]
    # Start: the labelled copy is created and the unlabelled series ends; end: the reverse.
    assert (util["created"], util["ended"], util["peak_active"]) == (2, 2, 2)
    assert util["created_per_hour_lab"] == 12.0  # 2 in 10 minutes
    assert util["created_per_hour_real"] == pytest.approx(0.2)  # time scale 60
    hpc = document["hpc_job"]
    assert hpc["families_per_gpu"] == 2
    assert hpc["jobs"] == [{"job_id": "5", "gpus": 1, "series": 2, "expected": 2, "seen_evaluations": 13}]
    assert hpc["multiplier"]["peak"] == 1.0
    markdown = (tmp_path / "report" / "churn.md").read_text()
    assert "| dcgm | `DCGM_FI_DEV_GPU_UTIL` | 2 | 2 |" in markdown
    assert "lab churn --lab external --start 2026-11-30T10:00:00Z --end 2026-11-30T10:10:00Z" in markdown
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "report" / "churn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_id_slurm_did_not_run_violates_the_bound_and_exits_1(tmp_path: Path) -> None:
    with serve(scenario(gpu0=["5"], gpu1=["6"])) as url:
        code, output, document = run(tmp_path, url)
    assert code == 1
    assert "bound VIOLATED" in output
    assert "error: the hpc_job bound is violated" in output
    assert "hpc_job values of no GPU job running then (first at 2026-11-30T10:01:45Z: 6)" in output
    assert document["bound"]["holds"] is False


def test_two_jobs_sharing_a_gpu_double_its_series(tmp_path: Path) -> None:
    sharing = f"6|{T0 + 100}|{T0 + 290}|COMPLETED|gres/gpu=1\n"
    with serve(scenario(gpu0=["5", "6"])) as url:
        code, output, document = run(tmp_path, url, sacct_text=SACCT + sharing)
    assert code == 0, output
    multiplier = document["hpc_job"]["multiplier"]
    assert multiplier["peak"] == 2.0 and multiplier["peak_jobs_on_one_gpu"] == 2.0


def test_chunks_that_load_too_many_samples_are_halved_with_the_same_result(tmp_path: Path) -> None:
    (tmp_path / "whole").mkdir()
    (tmp_path / "halved").mkdir()
    with serve(scenario(gpu0=["5"])) as url:
        _, _, whole = run(tmp_path / "whole", url)
    limited = scenario(gpu0=["5"])
    limited.max_samples = 12
    with serve(limited) as url:
        code, output, halved = run(tmp_path / "halved", url)
    assert code == 0, output
    assert halved["families"] == whole["families"]
    assert halved["timeline"] == whole["timeline"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--since", "1h", "--start", "2026-11-30T10:00:00Z"], "either --since or --start/--end"),
        (["--end", "2026-11-30T10:00:00Z"], "--end needs --start"),
        (["--since", "1h", "--step", "0.5s"], "whole seconds"),
        (
            ["--start", "2026-11-30T10:10:00Z", "--end", "2026-11-30T10:00:00Z"],
            "ends (2026-11-30T10:00:00Z) before",
        ),
    ],
)
def test_bad_windows_get_one_clear_line(tmp_path: Path, argv: list[str], message: str) -> None:
    with serve(Scenario()) as url:
        result = CliRunner().invoke(app, ["--prometheus", url, "--sacct", "/dev/null", *argv])
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def test_no_prometheus_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--prometheus", "http://127.0.0.1:9", "--sacct", "/dev/null"])
    assert result.exit_code == 1
    assert "error: Prometheus: " in result.output and "Fix: check the lab is up" in result.output


def test_hpc_job_queries_count_only_each_targets_latest_scrape() -> None:
    asked = queries("dcgm", 15, fresh_s=16, witness="DCGM_FI_DEV_GPU_UTIL")
    fresh = 'timestamp(DCGM_FI_DEV_GPU_UTIL{job="dcgm", hpc_job!=""}) > time() - 16'
    for name in ("hpc_job", "labelled_gpus", "busiest_gpu", "node_at_rest_min"):
        assert fresh in asked[name], name
    # Churn compares each evaluation with the one a step before, by family.
    assert "offset 15s" in asked["created"] and '"churn_family", "$1", "__name__"' in asked["created"]
