"""The job scripts, run by bash as slurmd would run them (with the job's environment), end as planned."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from lab.workload.jobscript import FAILURES, heartbeat_s, render
from lab.workload.plan import FAILURE_KINDS, PlannedJob

JOB = PlannedJob(
    index=7,
    submit_s=0.0,
    workload_class="training",
    user="alice",
    account="llm-pretrain",
    partition="gpu",
    qos="normal",
    gpus=2,
    nodes=1,
    duration_s=150.0,
    time_limit_s=172800,
    outcome="completed",
)
ENV = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "4711", "SLURMD_NODENAME": "dgx-002", "SLURM_JOB_GPUS": "0,1"}
LINE = re.compile(r"^time=\S+Z level=(INFO|WARN|ERROR) msg=\"[^\"]+\" job_id=4711 class=\w+ node=dgx-002\b")


def _run(job: PlannedJob, tmp_path: Path, time_scale: float = 100.0) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.sh"
    script.write_text(render(job, time_scale))
    return subprocess.run(
        ["bash", str(script)], env=ENV, capture_output=True, text=True, timeout=30, check=False
    )


def test_a_completed_job_logs_its_id_on_every_line_and_exits_0(tmp_path: Path) -> None:
    result = _run(JOB, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(LINE.match(line) for line in lines), lines
    assert 'msg="job started"' in lines[0] and "gpus=0,1" in lines[0]
    assert 'msg="job finished"' in lines[-1]
    assert sum('msg="train step"' in line for line in lines) == 1  # 1.5 lab seconds, a line per second


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_a_failed_job_prints_its_failure_with_the_job_id(tmp_path: Path, kind: str) -> None:
    result = _run(replace(JOB, outcome="failed", failure=kind), tmp_path, time_scale=1000.0)
    trace, code = FAILURES[kind]
    assert result.stderr.splitlines() == list(trace)
    last = result.stdout.splitlines()[-1]
    assert LINE.match(last) and "level=ERROR" in last
    if code > 128:  # the NCCL watchdog aborts: the script dies of SIGABRT (Slurm: FAILED, ExitCode 0:6)
        assert result.returncode == -signal.SIGABRT and "signal=SIGABRT" in last
    else:
        assert result.returncode == code and f"exit_code={code}" in last
    assert trace[-1].split(":")[0].replace("'", "") in last


@pytest.mark.parametrize("outcome", ["cancelled", "timeout"])
def test_cancelled_and_timeout_jobs_run_until_slurm_signals_them(tmp_path: Path, outcome: str) -> None:
    script = tmp_path / "job.sh"
    script.write_text(render(replace(JOB, outcome=outcome), 100.0))
    out = tmp_path / "out"
    with out.open("w") as stream:
        process = subprocess.Popen(["bash", str(script)], env=ENV, stdout=stream, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while out.read_text().count('msg="train step"') < 2:  # it outlives its 1.5 s run time
            assert process.poll() is None, "the job ended by itself"
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGTERM)  # slurmstepd signals every process of the job
        assert process.wait(timeout=10) == 143
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    last = out.read_text().splitlines()[-1]
    assert LINE.match(last) and 'msg="received SIGTERM, stopping"' in last


def test_scripts_are_deterministic_and_say_what_they_plan() -> None:
    text = render(replace(JOB, outcome="failed", failure="nccl_timeout"), 60)
    assert text == render(replace(JOB, outcome="failed", failure="nccl_timeout"), 60)
    assert text.startswith("#!/bin/bash\n")
    assert "plan job 7, class training, planned outcome failed" in text
    assert "sleep 1.000" in text and "sleep 0.500" in text  # 150 s real / 60 = 2.5 lab seconds


@pytest.mark.parametrize(("scale", "beat"), [(1, 60.0), (30, 2.0), (60, 1.0), (600, 1.0)])
def test_progress_lines_come_once_a_real_minute_but_at_most_once_a_lab_second(
    scale: float, beat: float
) -> None:
    assert heartbeat_s(scale) == beat
