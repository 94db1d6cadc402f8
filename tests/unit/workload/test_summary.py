"""The summary, computed from slurmdbd records captured from the lab (fixtures/slurmrestd-24.11.5)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from lab.workload.plan import PlannedJob
from lab.workload.submit import RestClient
from lab.workload.summary import base_state, number, summarise

from .workload_testing import FIXTURES

RECORDS = {job["job_id"]: job for job in json.loads((FIXTURES / "slurmdb-jobs.json").read_text())["jobs"]}
JOB = PlannedJob(0, 0.0, "training", "alice", "llm-pretrain", "gpu", "normal", 1, 1, 60.0, 3600, "completed")
PLANNED = {
    55: replace(JOB, index=0, outcome="timeout"),
    57: replace(JOB, index=1),
    58: replace(JOB, index=2, outcome="failed"),
    61: replace(JOB, index=3, outcome="failed"),
    63: replace(JOB, index=4, outcome="cancelled"),
    69: replace(JOB, index=5, outcome="failed"),
    337: replace(JOB, index=6, outcome="cancelled"),
}


def test_the_capture_holds_every_final_state() -> None:
    assert sorted(RECORDS) == sorted(PLANNED), "fixture and expectations must name the same jobs"
    states = {job_id: base_state(record["state"]["current"]) for job_id, record in RECORDS.items()}
    assert states == {
        55: "TIMEOUT", 57: "COMPLETED", 58: "FAILED", 61: "FAILED",
        63: "CANCELLED", 69: "FAILED", 337: "CANCELLED",
    }  # fmt: skip
    assert RECORDS[337]["time"]["start"] == 4294967294  # cancelled while pending: slurmdbd's NO_VAL
    assert RECORDS[69]["exit_code"]["signal"]["name"] == "ABRT"  # the NCCL-watchdog-style abort
    assert number(RECORDS[58]["exit_code"]["return_code"]) == 134


def test_summary_counts_states_and_queue_waits_from_accounting() -> None:
    summary = summarise(PLANNED, RECORDS, time_scale=600.0, lab_elapsed_s=360.0, planned=8, rejections=["x"])
    assert summary.by_state == {"CANCELLED": 2, "COMPLETED": 1, "FAILED": 3, "TIMEOUT": 1}
    assert (summary.submitted, summary.started, summary.as_planned, summary.rejected) == (7, 6, 7, 1)
    assert summary.active == 0 and "as planned 7 of 7 ended" in summary.text()
    waits = [21, 81, 81, 80, 2, 0]  # start - submission of 55, 57, 58, 61, 63, 69; 337 never started
    assert summary.mean_queue_wait_s == pytest.approx(sum(waits) / 6)
    assert summary.median_queue_wait_s == 50.5
    assert summary.mean_run_s == pytest.approx((60 + 1 + 1 + 4 + 1 + 1) / 6)
    assert summary.as_dict()["mean_queue_wait_real_s"] == pytest.approx(sum(waits) / 6 * 600)


def test_a_job_missing_from_accounting_is_counted_as_such() -> None:
    summary = summarise(
        {**PLANNED, 70: JOB}, RECORDS, time_scale=1, lab_elapsed_s=1, planned=8, rejections=[]
    )
    assert summary.unaccounted == 1 and summary.submitted == 8
    assert "not yet in accounting: 1" in summary.text()


def test_the_client_reads_states_from_the_captured_answer() -> None:
    captured: dict[str, Any] = json.loads((FIXTURES / "jobs-state.json").read_text())
    client = RestClient("http://lab", lambda user: None, lambda *a, **k: (200, captured))  # type: ignore[arg-type, return-value]
    states = client.states("root")
    assert len(states) == len(captured["jobs"]) > 0
    assert set(states.values()) <= {
        "PENDING",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
    }
