"""`lab workload plan` and `run` as a user calls them (typer's test runner; no cluster)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from lab.commands.workload import app
from tests.unit.workload.workload_testing import shipped_data, with_workload

runner = CliRunner()


def test_plan_json_lists_every_field_of_every_job() -> None:
    result = runner.invoke(app, ["plan", "--hours", "72", "--seed", "4", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["seed"] == 4 and document["time_scale"] == 1
    fields = {
        "submit_s", "gpus", "nodes", "duration_s", "time_limit_s", "outcome", "user", "account",
        "partition", "qos", "workload_class", "submit_lab_s", "time_limit_lab_min", "trace_gpus",
        "trace_run_s", "warm_s",
    }  # fmt: skip
    assert document["jobs"] and all(fields <= set(job) for job in document["jobs"])
    statistics = document["statistics"]
    assert statistics["trace"] == "Helios Venus"
    assert statistics["arrivals"]["gpu_jobs_per_gpu_per_day"]["configured"] == 0.6774  # 125,303 / 181 / 1,022
    assert statistics["gpu_seconds_per_job"]["configured"] == 98526.0737  # 12,345,612,608 / 125,303
    assert statistics["allocated_share"]["configured"] == 0.7724
    assert statistics["running_at_start"] == sum(1 for job in document["jobs"] if job["warm_s"] > 0)
    again = runner.invoke(app, ["plan", "--hours", "72", "--seed", "4", "--json"])
    assert again.output == result.output, "same seed, same plan"


def test_plan_text_shows_jobs_and_statistics_in_real_and_lab_time() -> None:
    result = runner.invoke(app, ["plan", "--hours", "48", "--time-scale", "60"])
    assert result.exit_code == 0, result.output
    assert "48 h real from Monday 00:00 = 48.0 min in the lab (time scale 60)" in result.output
    assert "compressed 60×: each lab second stands for 60 real seconds" in result.output
    labels = (
        "arrivals",
        "allocated",
        "sizes",
        "run time",
        "GPU-s/job",
        "cap",
        "outcomes",
        "GPU time",
        "classes",
    )
    for label in (*labels, "queue"):
        assert f"  {label}" in result.output
    assert "| 77.2 % of the GPUs in service" in result.output
    assert "| 98526 GPU-seconds per job" in result.output
    assert "trace reference median 0 s, mean 1253.29 s" in result.output


def test_a_bad_blueprint_stops_plan_and_run_with_file_field_and_fix(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(with_workload(shipped_data(), **{"classes.2.partition": "notebooks"})))
    for command in ("plan", "run"):
        result = runner.invoke(app, [command, "--blueprint", str(broken)])
        assert result.exit_code == 1
        assert f"error: {broken}: 1 problem(s)" in result.output
        assert "workload.classes.2.partition: 'notebooks' is not a partition" in result.output
        assert "Fix: use one of them" in result.output


def test_help_names_both_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "plan" in result.output and "run" in result.output


def test_an_unknown_way_into_slurm_is_refused_before_anything_runs() -> None:
    result = runner.invoke(app, ["run", "--submit-via", "sbatch"])
    assert result.exit_code == 1
    assert "--submit-via 'sbatch': use one of auto, pyslurm, slurmrestd" in result.output


def test_run_help_teaches_both_ways() -> None:
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--submit-via" in result.output and "--pyslurm-source" in result.output
    assert "slurmrestd" in result.output
