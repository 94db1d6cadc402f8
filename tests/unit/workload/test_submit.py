"""The slurmrestd client: request shapes against the 24.11.5 OpenAPI document, retries, clear errors."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from lab.attach.slurmrestd import Credentials
from lab.workload.plan import PlannedJob
from lab.workload.submit import NodeShape, RestClient, SubmitError, job_description

from .workload_testing import FIXTURES, FakeClock, FakeSlurmrestd, refused, unreachable

OPENAPI = json.loads((FIXTURES / "openapi-v0.0.42-job-submit.json").read_text())
SCHEMAS = OPENAPI["components"]["schemas"]
SHAPE = NodeShape(gpus_per_node=8, cpus_per_gpu=14, memory_per_gpu_mb=250000)
JOB = PlannedJob(0, 10.0, "inference", "frank", "inference", "gpu", "high", 4, 1, 95.0, 86400, "completed")


def _conforms(value: Any, schema: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return _conforms(value, SCHEMAS[schema["$ref"].rsplit("/", 1)[1]])
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return isinstance(value, dict) and all(
            k in properties and _conforms(v, properties[k]) for k, v in value.items()
        )
    if kind == "array":
        return isinstance(value, list) and all(_conforms(item, schema["items"]) for item in value)
    expected = {"string": str, "integer": int, "boolean": bool, "number": int | float}[kind]
    return isinstance(value, expected) and not (kind == "integer" and isinstance(value, bool))


@pytest.mark.parametrize(
    "job",
    [JOB, replace(JOB, gpus=16, nodes=2), replace(JOB, outcome="failed", failure="cuda_out_of_memory")],
    ids=["one-node", "two-nodes", "failed"],
)
def test_the_request_is_a_v0_0_42_job_submit_req(job: PlannedJob) -> None:
    body = {"job": job_description(job, 60.0, SHAPE, "/tmp", 1)}
    assert _conforms(body, SCHEMAS["v0.0.42_job_submit_req"])
    assert OPENAPI["info"]["version"].startswith("Slurm-24.11.5")


def test_gpus_cpus_and_memory_follow_the_node_shape() -> None:
    one = job_description(JOB, 60.0, SHAPE, "/tmp", 1)
    assert one["tres_per_job"] == "gres/gpu:4" and "nodes" not in one
    assert one["cpus_per_tres"] == "gres/gpu:14" and one["memory_per_tres"] == "gres/gpu:250000"
    two = job_description(replace(JOB, gpus=16, nodes=2), 60.0, SHAPE, "/tmp", 1)
    assert two["nodes"] == "2" and two["tres_per_node"] == "gres/gpu:8" and "tres_per_job" not in two
    assert (one["account"], one["partition"], one["qos"]) == ("inference", "gpu", "high")
    assert one["standard_output"] == "/tmp/workload-%j.out"


@pytest.mark.parametrize(
    ("limit_s", "scale", "minutes"), [(86400, 1, 1440), (86400, 60, 24), (1800, 60, 1), (120, 600, 1)]
)
def test_limits_are_compressed_to_whole_minutes(limit_s: int, scale: float, minutes: int) -> None:
    described = job_description(replace(JOB, time_limit_s=limit_s), scale, SHAPE, "/tmp", 1)
    assert described["time_limit"] == {"set": True, "infinite": False, "number": minutes}


def _client(fake: FakeSlurmrestd, pauses: list[float] | None = None) -> RestClient:
    issued = iter(range(1000))
    return RestClient(
        "http://127.0.0.1:6820",
        lambda user: Credentials(user, f"token-{user}-{next(issued)}"),
        fake,
        pause=(pauses.append if pauses is not None else lambda _s: None),
    )


def test_transient_failures_are_retried_with_backoff() -> None:
    fake = FakeSlurmrestd(FakeClock())
    fake.failures = [
        unreachable(),
        (503, {}),
        (500, {"errors": [{"error": "Unable to contact slurm controller"}]}),
    ]
    pauses: list[float] = []
    job_id = _client(fake, pauses).submit("frank", job_description(JOB, 60, SHAPE, "/tmp", 1))
    assert job_id == 101
    assert pauses == [0.5, 1.0, 2.0]


def test_slurms_refusal_is_not_retried_and_names_the_fix() -> None:
    fake = FakeSlurmrestd(FakeClock())
    fake.failures = [refused("Invalid qos specification", 2066)]
    with pytest.raises(SubmitError) as raised:
        _client(fake).submit("frank", job_description(JOB, 60, SHAPE, "/tmp", 1))
    assert len(fake.requests) == 1
    message = str(raised.value)
    assert "HTTP 500: Invalid qos specification: Batch job submission failed" in message
    assert "Fix: the QOS is not allowed" in message


def test_an_unreachable_lab_says_so_after_the_retries() -> None:
    fake = FakeSlurmrestd(FakeClock())
    fake.failures = [unreachable()] * 5
    with pytest.raises(
        SubmitError, match=r"no answer after 5 attempts \(.*Connection refused\)\. Fix: is the lab up"
    ):
        _client(fake).states("root")


def test_a_rejected_token_is_renewed_once() -> None:
    fake = FakeSlurmrestd(FakeClock())
    fake.valid_tokens = {"token-frank-1"}  # the first token issued (…-0) has expired
    assert _client(fake).submit("frank", job_description(JOB, 60, SHAPE, "/tmp", 1)) == 101


def test_a_token_slurmctld_keeps_refusing_is_explained() -> None:
    fake = FakeSlurmrestd(FakeClock())
    fake.valid_tokens = set()
    with pytest.raises(SubmitError, match=r"Authentication failure.*Fix: slurmctld rejected the token"):
        _client(fake).states("root")
    assert len(fake.requests) == 2


def test_cancelling_a_job_that_already_ended_is_fine_but_a_refusal_is_not() -> None:
    fake = FakeSlurmrestd(FakeClock())
    client = _client(fake)
    client.cancel("frank", 99999)  # slurmrestd: HTTP 200, status[].error 2017 "Invalid job id"
    job_id = client.submit("frank", job_description(JOB, 60, SHAPE, "/tmp", 1))
    with pytest.raises(SubmitError, match="Access/permission denied"):
        client.cancel("grace", job_id)
    client.cancel("frank", job_id)
    client.cancel("frank", job_id)  # 2021 "Job/step already completing or completed"
