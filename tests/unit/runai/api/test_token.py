"""``POST /api/v1/token``: the request shapes real clients send, the grants of TokenRequest's enum, and
tokens the Run:ai SDK can read."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from lab.runai.api import auth, reference
from lab.runai.api.routes import Answer, RestApi

CREDS = auth.Credentials(auth.CLIENT_ID, "s3cret", b"k" * auth.SIGNING_KEY_BYTES)
NOW = 1_796_212_187.0


def _post(body: Any) -> Answer:
    api = RestApi(CREDS, "image", clock=lambda: NOW)
    return api.handle("POST", "/api/v1/token", {}, json.dumps(body).encode())


@pytest.mark.parametrize(
    "body",
    [
        # runapy 1.220.0, runai/api_client.py _make_token_request
        {"grantType": "app_token", "AppId": auth.CLIENT_ID, "AppSecret": "s3cret"},
        # docs.run.ai/v2.20/developer/rest-auth/
        {"grantType": "client_credentials", "clientId": auth.CLIENT_ID, "clientSecret": "s3cret"},
        # the reference's TokenRequest
        {"grantType": "client_credentials", "clientID": auth.CLIENT_ID, "clientSecret": "s3cret"},
        {"grantType": "app_token", "appID": auth.CLIENT_ID, "appSecret": "s3cret"},
        # keys match regardless of case; unknown keys are ignored
        {"GRANTTYPE": "app_token", "appid": auth.CLIENT_ID, "APPSECRET": "s3cret", "scope": "x"},
    ],
)
def test_each_spelling_in_use_gets_a_token(body: dict[str, str]) -> None:
    answer = _post(body)
    assert answer.status == 200, answer.body
    assert set(answer.body) == {"accessToken"}  # TokenResponse: no id, refresh or external token
    auth.verify(CREDS, f"Bearer {answer.body['accessToken']}", NOW)


def _refused(body: Any) -> tuple[str, str]:
    answer = _post(body)
    assert answer.status == 400
    # components.responses.400BadRequest → components.schemas.Error: code and message required.
    assert set(answer.body) <= {"code", "message", "details"} and answer.body["code"] == 400
    assert isinstance(answer.body["message"], str) and isinstance(answer.body["details"], str)
    models = pytest.importorskip("runai.models")
    assert models.Error.from_dict(answer.body).code == 400
    return answer.body["message"], answer.body["details"]


def test_a_wrong_secret_is_refused() -> None:
    message, _ = _refused({"grantType": "app_token", "AppId": auth.CLIENT_ID, "AppSecret": "guess"})
    assert message == "invalid client credentials"
    message, _ = _refused({"grantType": "client_credentials", "clientId": "other", "clientSecret": "s3cret"})
    assert message == "invalid client credentials"


def test_a_grant_outside_the_enum_is_refused_with_the_enum() -> None:
    message, details = _refused({"grantType": "authorization_code", "clientId": auth.CLIENT_ID})
    assert "authorization_code" in message
    assert details == ", ".join(reference.GRANT_TYPES)
    assert _refused({"clientId": auth.CLIENT_ID, "clientSecret": "s3cret"})[1] == details


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"grantType": "refresh_token", "refreshToken": "r"}, "issues no refresh tokens"),
        ({"grantType": "exchange_token", "code": "c", "redirectUri": "u"}, "no identity provider"),
        ({"grantType": "password", "username": "u", "password": "p"}, "no users"),
    ],
)
def test_a_grant_of_the_enum_the_lab_does_not_honour_says_why(body: dict[str, str], words: str) -> None:
    message, details = _refused(body)
    assert words in message and "app_token" in details and "client_credentials" in details


@pytest.mark.parametrize(
    "body",
    [
        {"grantType": "app_token", "clientID": auth.CLIENT_ID, "clientSecret": "s3cret"},  # the other grant's
        {"grantType": "client_credentials", "clientId": auth.CLIENT_ID},
        {"grantType": "app_token", "AppId": auth.CLIENT_ID, "AppSecret": 7},
        ["app_token"],
    ],
)
def test_a_request_without_its_grants_fields_is_refused(body: Any) -> None:
    _refused(body)


def test_a_body_that_is_not_json_is_refused() -> None:
    api = RestApi(CREDS, "image", clock=lambda: NOW)
    answer = api.handle("POST", "/api/v1/token", {}, b"grantType=app_token")
    assert answer.status == 400 and answer.body["message"] == "the request body is not JSON"


def _sdk_claims(token: str) -> dict[str, Any]:
    """runapy 1.220.0 runai/token_refresher.py ``_set_token_expiry``, as it decodes a token."""
    token_payload = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.b64decode(token_payload + "=="))
    return decoded


def test_every_token_decodes_as_the_sdk_decodes_it_and_carries_exp() -> None:
    # The SDK reads the payload as standard base64: a '-' or '_' of base64url would break it. The
    # claims are ASCII JSON whose bytes never make those two (both need a byte of 0x3e, 0x3f, 0x7e or
    # 0x7f, or of 0x80 and over, in the right place); 10^5 issue times over three years hold it, and
    # fail when a claim that breaks it is added.
    for offset in range(100_000):
        now = NOW + offset * 997.0
        token = auth.issue(CREDS, now)
        payload = token.split(".")[1]
        assert "-" not in payload and "_" not in payload, payload
        claims = _sdk_claims(token)
        assert claims["exp"] == int(now) + auth.TOKEN_LIFETIME_S
        assert claims == {"sub": auth.CLIENT_ID, "iat": int(now), "exp": claims["exp"]}


def test_the_sdk_model_reads_the_answer() -> None:
    models = pytest.importorskip("runai.models")
    body = _post({"grantType": "app_token", "AppId": auth.CLIENT_ID, "AppSecret": "s3cret"}).body
    assert models.TokenResponse.from_dict(body).access_token == body["accessToken"]
