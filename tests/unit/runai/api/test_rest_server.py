"""The Run:ai API over real HTTP on the loopback: JSON answers, the token grant, 401 without a token."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runai.api import auth
from lab.runai.api.rest_server import RestServer, serve
from lab.runai.api.routes import RestApi

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
