"""The Run:ai API over real HTTP on the loopback: JSON answers, the token grant, 401 without a token."""

from __future__ import annotations

import datetime
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runai.api import auth
from lab.runai.api.rest_server import RestServer, serve
from lab.runai.api.routes import RestApi
from tests import runai_sdk

from ...kube.api_objects import busy

CREDS = auth.Credentials(auth.CLIENT_ID, "s3cret", b"k" * auth.SIGNING_KEY_BYTES)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RestServer]:
    api = RestApi(CREDS, "image")
    api.observe(busy(tmp_path).look())
    running = serve(api, "127.0.0.1:0")
    yield running
    running.shutdown()
    running.server_close()


def _call(
    server: RestServer, path: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, dict]:  # type: ignore[type-arg]
    request = urllib.request.Request(f"http://{server.listen_address}{path}", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.headers["Content-Type"] == "application/json"
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def test_a_client_gets_a_token_and_then_telemetry(server: RestServer) -> None:
    grant = {"grantType": "client_credentials", "clientId": auth.CLIENT_ID, "clientSecret": "s3cret"}
    status, body = _call(
        server, "/api/v1/token", {"Content-Type": "application/json"}, json.dumps(grant).encode()
    )
    assert status == 200
    headers = {"Authorization": f"Bearer {body['accessToken']}"}
    status, body = _call(server, "/api/v1/nodes/telemetry?telemetryType=TOTAL_GPU_NODES", headers)
    assert (status, body["values"]) == (200, [{"value": "8"}])


def test_without_a_token_the_answer_is_401_with_the_error_body(server: RestServer) -> None:
    status, body = _call(server, "/api/v1/workloads", {})
    assert status == 401 and body["code"] == 401 and "missing Authorization header" in body["details"]


def test_the_run_ai_sdk_signs_in_and_lists_what_a_script_lists_first(server: RestServer) -> None:
    """runapy 1.220.0 against the lab over HTTP: its token request (``AppId``/``AppSecret``), its
    decoding of the token's ``exp`` (auto_refresh_token, on by default), then the listing calls."""
    from runai.api_client import ApiClient
    from runai.configuration import Configuration
    from runai.runai_client import RunaiClient

    configuration = Configuration(
        client_id=auth.CLIENT_ID, client_secret="s3cret", runai_base_url=f"http://{server.listen_address}"
    )
    client = RunaiClient(ApiClient(configuration))
    org = client.organizations
    clusters = org.clusters.get_clusters().data
    cid = clusters[0]["uuid"]
    assert org.clusters.get_cluster_by_uuid(cluster_uuid=cid).data == clusters[0]
    assert [p["name"] for p in org.node_pools.get_nodepools(sort_by="name").data["nodepools"]] == [
        "default",
        "inference",
    ]
    assert org.node_pools.get_nodepool(nodepool_id="inference").data["labelValue"] == "inference"
    assert len(org.nodes.get_nodes(cluster_uuid=cid).data["nodes"]) == 8
    page = org.projects.get_projects(limit=2, filter_by=["parentName==research"]).data
    assert [p["id"] for p in page["projects"]] == ["team-a", "team-b"]
    assert org.projects.get_project(project_id="team-c").data["defaultNodePools"] == ["inference", "default"]
    assert [d["id"] for d in org.departments.get_departments().data["departments"]] == ["research", "product"]
    assert org.departments.get_department(department_id="product").data["totalResources"]["gpuQuota"] == 24.0


def test_runapy_reads_every_path_the_lab_serves_into_its_own_models(server: RestServer) -> None:
    """Each answer of the scripted cluster read by the SDK's models; the lab test does it on a real one."""
    server.api.scraped(time.time() - 60)  # one scrape's values: the metrics paths have a sample
    sdk = runai_sdk.client(f"http://{server.listen_address}", auth.CLIENT_ID, "s3cret")
    read = runai_sdk.read_every_path(sdk, datetime.datetime.now(datetime.UTC))
    assert sorted(read.parsed) == sorted(runai_sdk.CALLS)
    totals = {
        m.type: [float(v.value) for v in m.values or []]
        for m in read.parsed["get_cluster_metrics"].measurements
    }
    assert totals["TOTAL_GPU"] == [64.0] and totals["TOTAL_GPU_NODES"] == [8.0]
    workload = read.parsed["get_workload"]
    assert (workload.tenant_id, workload.k8s_phase) == (1001, "Running")
    assert workload.phase_updated_at == workload.k8s_phase_updated_at == workload.updated_at
