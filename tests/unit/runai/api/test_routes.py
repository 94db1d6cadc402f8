"""The Run:ai API on a busy cluster: documented shapes, values equal to the runai_* series, and the
reference's error codes and body for every bad request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.runai.api import auth
from lab.runai.api.routes import Answer, RestApi
from lab.runai.series_runai import runai_samples

from ...kube.api_objects import BP, NODE, VICTIM, VICTIM_POD, VICTIM_POD_UID, VICTIM_UID, busy

CREDS = auth.Credentials(auth.CLIENT_ID, "s3cret", b"k" * auth.SIGNING_KEY_BYTES)
NOW = 1_796_212_187.0
CID = BP.cluster_id
WINDOW = "start=2026-12-02T11:49:00Z&end=2026-12-02T11:50:00Z&numberOfSamples=3"


@pytest.fixture
def api(tmp_path: Path) -> RestApi:
    rest = RestApi(CREDS, "nvcr.io/nvidia/pytorch:24.05-py3", clock=lambda: NOW)
    rest.observe(busy(tmp_path).look())
    for at in (NOW - 60.0, NOW - 45.0, NOW - 30.0):  # three scrapes of /metrics
        rest.scraped(at)
    return rest


def _token(api: RestApi) -> str:
    body = {"grantType": "client_credentials", "clientId": auth.CLIENT_ID, "clientSecret": "s3cret"}
    answer = api.handle("POST", "/api/v1/token", {}, json.dumps(body).encode())
    assert answer.status == 200
    return str(answer.body["accessToken"])


def get(api: RestApi, target: str) -> Answer:
    return api.handle("GET", target, {"authorization": f"Bearer {_token(api)}"})


def ok(api: RestApi, target: str) -> Any:
    answer = get(api, target)
    assert answer.status == 200, answer.body
    return answer.body


def _error(answer: Answer, code: int) -> str:
    assert answer.status == code
    assert set(answer.body) == {"code", "message", "details"} and answer.body["code"] == code
    return str(answer.body["message"])


def test_cluster_metrics_are_the_scraped_values_at_each_sample(api: RestApi) -> None:
    body = ok(api, f"/api/v1/clusters/{CID}/metrics?metricType=TOTAL_GPU,ALLOCATED_GPU&{WINDOW}")
    assert [m["type"] for m in body["measurements"]] == ["TOTAL_GPU", "ALLOCATED_GPU"]
    total, allocated = body["measurements"]
    # Samples at 11:49:00, 11:49:30 and 11:50:00; scrapes at 11:48:47, 11:49:02 and 11:49:17.
    assert [v["value"] for v in total["values"]] == ["64"] * 3
    assert [v["value"] for v in allocated["values"]] == ["1"] * 3
    assert all(v["timestamp"].endswith("Z") for v in total["values"])


def test_the_api_and_the_runai_series_agree_on_one_look(tmp_path: Path) -> None:
    cluster = busy(tmp_path).look()
    series: dict[str, float] = {}
    for name, _, value in runai_samples(cluster):
        series[name] = series.get(name, 0.0) + value
    rest = RestApi(CREDS, "image", clock=lambda: NOW)
    rest.observe(cluster)
    rest.scraped(NOW)
    window = "start=2026-12-02T11:49:47Z&end=2026-12-02T11:49:47Z&numberOfSamples=1"
    body = ok(rest, f"/api/v1/clusters/{CID}/metrics?metricType=ALLOCATED_GPU,GPU_QUOTA&{window}")
    allocated, quota = (float(m["values"][0]["value"]) for m in body["measurements"])
    assert allocated == series["runai_allocated_gpu_count_per_node"]
    assert quota == series["runai_project_guaranteed_gpus"]
    wl = ok(rest, f"/api/v1/workloads/{VICTIM_UID}/metrics?metricType=GPU_ALLOCATION&{window}")
    assert (
        float(wl["measurements"][0]["values"][0]["value"]) == series["runai_allocated_gpu_count_per_workload"]
    )


def test_node_pool_metrics_count_the_pools_own_nodes(api: RestApi) -> None:
    body = ok(api, f"/api/v1/clusters/{CID}/nodepools/inference/metrics?metricType=TOTAL_GPU_NODES&{WINDOW}")
    assert {v["value"] for v in body["measurements"][0]["values"]} == {"2"}
    missing = get(api, f"/api/v1/clusters/{CID}/nodepools/nowhere/metrics?metricType=TOTAL_GPU&{WINDOW}")
    assert "node pool nowhere not found" in _error(missing, 404)


def test_node_telemetry_sums_nodes_and_groups_them(api: RestApi) -> None:
    total = ok(api, "/api/v1/nodes/telemetry?telemetryType=TOTAL_GPUS")
    assert total["type"] == "TOTAL_GPUS" and total["values"] == [{"value": "64"}]
    assert total["timestamp"] == "2026-12-02T11:49:47.000Z"
    by_pool = ok(api, "/api/v1/nodes/telemetry?telemetryType=ALLOCATED_GPUS&groupBy=Nodepool")
    assert [(v["groups"][0]["value"], v["value"]) for v in by_pool["values"]] == [
        ("default", "1"),
        ("inference", "0"),
    ]
    assert by_pool["values"][0]["groups"][0]["key"] == "Nodepool"
    free = ok(
        api,
        f"/api/v1/nodes/telemetry?telemetryType=FREE_GPUS&groupBy=Node&nodepoolName=default&clusterId={CID}",
    )
    assert {v["groups"][0]["value"]: v["value"] for v in free["values"]}[NODE] == "7"
    other = ok(
        api, "/api/v1/nodes/telemetry?telemetryType=TOTAL_GPUS&clusterId=00000000-0000-4000-8000-000000000000"
    )
    assert other["values"] == [{"value": "0"}]


def test_workload_telemetry_counts_by_phase_and_project(api: RestApi) -> None:
    body = ok(api, "/api/v1/workloads/telemetry?telemetryType=WORKLOADS_COUNT&groupBy=ProjectId,Phase")
    rows = {tuple(g["value"] for g in v["groups"]): v["value"] for v in body["values"]}
    assert rows == {("team-a", "Running"): "1", ("team-b", "Pending"): "1"}
    gpus = ok(api, "/api/v1/workloads/telemetry?telemetryType=GPU_ALLOCATION&departmentId=research")
    assert gpus["values"] == [{"value": "1"}]


def test_project_and_department_telemetry_carry_quotas_and_allocations(api: RestApi) -> None:
    quota = ok(api, "/api/v1/org-unit/projects/telemetry?telemetryType=GPU_QUOTA&groupBy=NodepoolId")
    assert {v["groups"][0]["value"]: v["value"] for v in quota["values"]} == {
        "default": "48",
        "inference": "16",
    }
    allocated = ok(api, "/api/v1/org-unit/projects/telemetry?telemetryType=GPU_ALLOCATION&groupBy=ParentId")
    assert {v["groups"][0]["value"]: v["value"] for v in allocated["values"]} == {
        "product": "0",
        "research": "1",
    }
    departments = ok(api, "/api/v1/org-unit/departments/telemetry?telemetryType=GPU_QUOTA&groupBy=CLUSTER_ID")
    assert departments["values"] == [
        {"value": "64", "groups": [{"key": "CLUSTER_ID", "value": CID, "name": BP.name}]}
    ]


def test_workloads_list_filters_sorts_and_pages(api: RestApi) -> None:
    body = ok(api, "/api/v1/workloads")
    assert {w["name"] for w in body["workloads"]} == {VICTIM, "train-00002"} and "next" not in body
    running = ok(api, "/api/v1/workloads?filterBy=phase==Running")
    assert [w["id"] for w in running["workloads"]] == [VICTIM_UID]
    first = ok(api, "/api/v1/workloads?sortBy=name&sortOrder=desc&limit=1")
    assert [w["name"] for w in first["workloads"]] == ["train-00002"] and first["next"] == 1
    assert ok(api, "/api/v1/workloads?filterBy=allocatedGPU>=1")["workloads"][0]["name"] == VICTIM
    assert ok(api, "/api/v1/workloads?deleted=true")["workloads"] == []
    assert "limit=0 is out of range" in _error(get(api, "/api/v1/workloads?limit=0"), 400)
    assert "sortBy 'color'" in _error(get(api, "/api/v1/workloads?sortBy=color"), 400)


def test_one_workload_and_its_pods(api: RestApi) -> None:
    workload = ok(api, f"/api/v1/workloads/{VICTIM_UID}")
    assert (workload["name"], workload["phase"], workload["clusterId"]) == (VICTIM, "Running", CID)
    assert workload["namespace"] == "runai-team-a" and workload["runningPods"] == 1
    assert workload["allocatedResources"]["gpu"] == 1.0
    pods = ok(api, f"/api/v1/workloads/{VICTIM_UID}/pods")["pods"]
    assert [(p["name"], p["id"], p["nodeName"], p["k8sPhase"]) for p in pods] == [
        (VICTIM_POD, VICTIM_POD_UID, NODE, "Running")
    ]
    unknown = "11111111-1111-4111-8111-111111111111"
    assert "not found" in _error(get(api, f"/api/v1/workloads/{unknown}"), 404)
    assert "not a UUID" in _error(get(api, "/api/v1/workloads/train-00001/pods"), 400)


@pytest.mark.parametrize(
    ("target", "code", "words"),
    [
        (f"/api/v1/clusters/{CID}/metrics?metricType=GPU_FLOPS&{WINDOW}", 400, "not one of the reference's"),
        (f"/api/v1/clusters/{CID}/metrics?metricType=CPU_UTILIZATION&{WINDOW}", 400, "does not compute"),
        (
            f"/api/v1/clusters/{CID}/metrics?metricType=TOTAL_GPU&start=2026-12-02T12:00:00Z&end=2026-12-02T11:00:00Z",
            400,
            "is after end",
        ),
        (f"/api/v1/clusters/{CID}/metrics?metricType=TOTAL_GPU&{WINDOW}0000", 400, "out of range"),
        (f"/api/v1/clusters/{CID}/metrics?metricType=TOTAL_GPU", 400, "missing required parameter start"),
        (f"/api/v1/clusters/not-a-uuid/metrics?metricType=TOTAL_GPU&{WINDOW}", 400, "not a UUID"),
        (
            f"/api/v1/clusters/00000000-0000-4000-8000-000000000000/metrics?metricType=TOTAL_GPU&{WINDOW}",
            404,
            "not found",
        ),
        ("/api/v1/nodes/telemetry?telemetryType=IDLE_ALLOCATED_GPUS", 400, "does not compute"),
        (
            "/api/v1/nodes/telemetry?telemetryType=TOTAL_GPUS&groupBy=ClusterId,Nodepool,Node",
            400,
            "groupBy has 3",
        ),
        ("/api/v1/projects", 404, "no such path"),
    ],
)
def test_bad_requests_get_the_documented_code_and_error_body(
    api: RestApi, target: str, code: int, words: str
) -> None:
    assert words in _error(get(api, target), code)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer forged.token.value"},
        {"authorization": f"Bearer {auth.issue(auth.Credentials(auth.CLIENT_ID, 'x', b'o' * 32), NOW)}"},
    ],
)
def test_a_missing_or_forged_token_is_a_401(api: RestApi, headers: dict[str, str]) -> None:
    answer = api.handle("GET", "/api/v1/nodes/telemetry?telemetryType=TOTAL_GPUS", headers)
    assert _error(answer, 401) == "Unauthorized"


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        json.dumps({"grantType": "password", "username": "u", "password": "p"}).encode(),
        json.dumps(
            {"grantType": "client_credentials", "clientId": auth.CLIENT_ID, "clientSecret": "guess"}
        ).encode(),
    ],
)
def test_a_bad_token_request_is_a_400(api: RestApi, body: bytes) -> None:
    _error(api.handle("POST", "/api/v1/token", {}, body), 400)


def test_the_swaggers_app_token_grant_works_too(api: RestApi) -> None:
    body = {"grantType": "app_token", "appID": auth.CLIENT_ID, "appSecret": "s3cret"}
    assert api.handle("POST", "/api/v1/token", {}, json.dumps(body).encode()).status == 200


def test_before_the_first_look_the_api_answers_503() -> None:
    rest = RestApi(CREDS, "image", clock=lambda: NOW)
    answer = rest.handle("GET", "/api/v1/workloads", {"authorization": f"Bearer {auth.issue(CREDS, NOW)}"})
    _error(answer, 503)
