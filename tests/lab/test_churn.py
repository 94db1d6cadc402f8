"""`lab churn` on the live lab, over a window in which this module's own GPU jobs ran: the bound
holds, the files are there, every DCGM family is in the table, each job has F × GPUs series, and
the server-side churn counts equal a client-side diff of the raw series."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testinfra.host import Host

from lab import promql
from lab.blueprint.slurm_blueprint import Blueprint
from lab.churn.series import series_key, turnover
from lab.churn.window import Window

from .conftest import submit_gpu_job, wait_for, window_start

pytestmark = pytest.mark.lab

# (gres, seconds): short jobs, so the window sees GPU jobs start and end, each alive for at least
# two 15 s scrapes
JOBS = (("gpu:2", 40), ("gpu:2", 40), ("gpu:1", 35))
DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")


@dataclass(frozen=True)
class ChurnRun:
    start: int
    end: int
    jobs: dict[str, int]  # job id → GPUs
    out: Path
    result: subprocess.CompletedProcess[str]

    @property
    def document(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.out / "churn.json").read_text())
        return loaded


@pytest.fixture(scope="module")
def prometheus(default_lab: Blueprint) -> str:
    return f"http://127.0.0.1:{default_lab.ports.prometheus}"


def _ended(controller: Host, ids: list[str]) -> bool:
    states = controller.check_output(f"sacct -X -n -P -j {','.join(ids)} -o State").split()
    return len(states) == len(ids) and all(state in DONE for state in states)


def _labels_gone(prometheus: str, ids: list[str]) -> bool:
    return not promql.query(prometheus, f'DCGM_FI_DEV_GPU_UTIL{{hpc_job=~"{"|".join(ids)}"}}')


@pytest.fixture(scope="module")
def churn_run(
    default_lab: Blueprint,
    host: Callable[[str], Host],
    prometheus: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> ChurnRun:
    controller = host("controller")
    # Up to three scrape intervals before the first job, so that the window spans several evaluations
    # even when the jobs end quickly, but never over another test's fault (the fault record says when
    # the last one settled: a stale hpc_job it left would break the bound).
    start = math.floor(window_start(default_lab, look_back_s=45))
    jobs = {
        submit_gpu_job(controller, f"--gres={gres}", seconds, time_limit_min=2): int(gres.split(":")[1])
        for gres, seconds in JOBS
    }
    ids = list(jobs)
    wait_for(lambda: _ended(controller, ids), 110, f"jobs {ids} to end")
    wait_for(lambda: _labels_gone(prometheus, ids), 40, f"hpc_job of {ids} to leave Prometheus")
    # At least a minute (four 15 s steps), however soon after a settled fault the window opened.
    end = max(math.ceil(time.time()), start + 60)
    wait_for(lambda: time.time() >= end, end - time.time() + 5, "a window of a minute")
    out = tmp_path_factory.mktemp("churn")
    argv = ["--lab", default_lab.name, "--start", str(start), "--end", str(end), "--out", str(out), "-q"]
    result = subprocess.run(
        [sys.executable, "-c", "from lab.commands.churn import app; app()", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    return ChurnRun(start, end, jobs, out, result)


def test_the_bound_holds_over_a_window_with_our_jobs(churn_run: ChurnRun) -> None:
    result = churn_run.result
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bound holds" in result.stdout
    bound = churn_run.document["bound"]
    assert bound["holds"] and not bound["over"] and not bound["unknown"]
    assert 1 <= bound["peak_distinct"] <= bound["peak_allowed"]


def test_png_markdown_and_json_are_written(churn_run: ChurnRun) -> None:
    assert (churn_run.out / "churn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (churn_run.out / "churn.md").read_text()
    assert markdown.startswith("# Churn report: lab `default`")
    assert "![active series, GPU jobs and distinct hpc_job over time](churn.png)" in markdown
    assert churn_run.document["window"]["steps"] >= 4


def test_the_table_lists_every_dcgm_family(churn_run: ChurnRun, prometheus: str) -> None:
    families = {
        s.labels["__name__"] for s in promql.query(prometheus, 'count by (__name__) ({job="dcgm", gpu!=""})')
    }
    assert len(families) == 25
    markdown = (churn_run.out / "churn.md").read_text()
    for family in families:
        assert f"| dcgm | `{family}` |" in markdown


def test_each_of_our_jobs_has_f_series_per_gpu(churn_run: ChurnRun, default_lab: Blueprint) -> None:
    hpc = churn_run.document["hpc_job"]
    f = hpc["families_per_gpu"]
    assert f == 25
    assert hpc["nodes_by_gpus"] == {str(default_lab.nodes.shape.gpus): default_lab.nodes.count}
    seen = {job["job_id"]: job for job in hpc["jobs"]}
    for job_id, gpus in churn_run.jobs.items():
        assert seen[job_id]["series"] == f * gpus == seen[job_id]["expected"]


def test_server_side_churn_equals_a_diff_of_the_raw_series(churn_run: ChurnRun, prometheus: str) -> None:
    """The `unless … offset` queries count exactly what diffing every evaluation's series would."""
    window = Window.between(churn_run.start, churn_run.end, churn_run.document["window"]["step_s"])
    raw = promql.query_range(prometheus, '{job="dcgm"}', window.start, window.end, window.step_s)
    snapshots: list[set[tuple[tuple[str, str], ...]]] = [set() for _ in range(window.steps + 1)]
    for item in raw:
        key = series_key(item["metric"])
        for t, _ in item["values"]:
            snapshots[window.index(float(t)) + 1].add(key)
    created, ended = turnover(snapshots)
    rows = [row for row in churn_run.document["families"] if row["construct"] == "dcgm"]
    assert sum(created.values()) > 0
    assert {r["family"]: r["created"] for r in rows if r["created"]} == {
        f: n for (_, f), n in created.items()
    }
    assert {r["family"]: r["ended"] for r in rows if r["ended"]} == {f: n for (_, f), n in ended.items()}
