"""Bearer tokens of the lab's Run:ai API: per-lab client credentials and the JWTs ``POST /api/v1/token``
grants for them.

Run:ai 2.20 (docs.run.ai/v2.20/developer/rest-auth/): an application's client ID and secret are
exchanged at ``POST /api/v1/token`` with ``{"grantType": "client_credentials", "clientId": …,
"clientSecret": …}`` for ``{"accessToken": …}``, sent as ``Authorization: Bearer <accessToken>``; the
swagger's ``bearerAuth`` scheme names the format JWT. The request's field names are matched without
regard to case (:func:`token_request`). The lab signs its JWTs with HS256 and a per-lab key; their
claims are ``sub``, ``iat`` and ``exp``. Its files (``client-secret``, ``token-signing.key``) are made
at ``lab up`` under ``.lab/<lab>/keys/runai-rest/`` (0400) and mounted read-only into the Run:ai
container.

Stdlib only: the driver runs it inside the lab's container.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from lab.runai.api import reference

CLIENT_ID = "aifactory-lab"  # the lab's one application (Run:ai: Settings → Applications)
CLIENT_SECRET_FILE = "client-secret"
SIGNING_KEY_FILE = "token-signing.key"
SIGNING_KEY_BYTES = 32  # HS256: a key as long as the hash
TOKEN_LIFETIME_S = 3600  # lab assumption; Run:ai does not state its tokens' lifetime (cantfind.md)
_HEADER = {"alg": "HS256", "typ": "JWT"}


class Unauthorized(Exception):
    """A request without a valid bearer token; the message says what is wrong with it."""


class BadTokenRequest(Exception):
    """A token request the lab refuses (400): the message says why, ``details`` what it takes."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details


@dataclass(frozen=True)
class Credentials:
    client_id: str
    client_secret: str
    signing_key: bytes

    @classmethod
    def read(cls, directory: Path) -> Credentials:
        secret = (directory / CLIENT_SECRET_FILE).read_text(encoding="ascii").strip()
        return cls(CLIENT_ID, secret, (directory / SIGNING_KEY_FILE).read_bytes())

    def matches(self, client_id: str, client_secret: str) -> bool:
        same_id = hmac.compare_digest(client_id.encode(), self.client_id.encode())
        return hmac.compare_digest(client_secret.encode(), self.client_secret.encode()) and same_id


def secret_files() -> dict[str, bytes]:
    """Fresh contents of the two secret files, by name (:mod:`lab.kinds.runai_lab` writes them 0400)."""
    return {
        CLIENT_SECRET_FILE: secrets.token_urlsafe(32).encode("ascii"),
        SIGNING_KEY_FILE: secrets.token_bytes(SIGNING_KEY_BYTES),
    }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, signing_input: str) -> str:
    return _b64(hmac.new(key, signing_input.encode("ascii"), hashlib.sha256).digest())


def issue(creds: Credentials, now: float) -> str:
    """A JWT (RFC 7519, HS256) for the lab's client, valid for TOKEN_LIFETIME_S from ``now``."""
    claims = {"sub": creds.client_id, "iat": int(now), "exp": int(now) + TOKEN_LIFETIME_S}
    head = _b64(json.dumps(_HEADER, separators=(",", ":")).encode())
    body = _b64(json.dumps(claims, separators=(",", ":")).encode())
    return f"{head}.{body}.{_sign(creds.signing_key, f'{head}.{body}')}"


def verify(creds: Credentials, authorization: str | None, now: float) -> None:
    """Accept an ``Authorization: Bearer <JWT>`` header this lab signed and that has not expired."""
    if not authorization:
        raise Unauthorized("missing Authorization header; send 'Authorization: Bearer <accessToken>'")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("the Authorization header is not 'Bearer <accessToken>'")
    parts = token.strip().split(".")
    if len(parts) != 3:
        raise Unauthorized("the bearer token is not a JWT (three dot-separated parts)")
    head, body, signature = parts
    if not hmac.compare_digest(signature, _sign(creds.signing_key, f"{head}.{body}")):
        raise Unauthorized("the bearer token's signature is not this lab's")
    try:
        header = json.loads(_unb64(head))
        claims = json.loads(_unb64(body))
    except ValueError as error:
        raise Unauthorized(f"the bearer token does not decode: {error}") from error
    if header.get("alg") != "HS256":
        raise Unauthorized(f"the bearer token's alg is {header.get('alg')!r}, not HS256")
    if not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
        raise Unauthorized("the bearer token has expired; request a new one at POST /api/v1/token")


_FIELDS = {name.lower(): name for name in reference.TOKEN_REQUEST_FIELDS}
_TAKES = "grantType app_token (appID, appSecret) or client_credentials (clientID, clientSecret)"
# The grants of TokenRequest's enum the lab does not honour, and why.
_NOT_HONOURED = {
    "refresh_token": "the lab issues no refresh tokens",
    "exchange_token": "the lab has no identity provider to exchange a token with",
    "password": "the lab has no users, only its one application",
}


def token_request(body: bytes) -> dict[str, str]:
    """The body's ``TokenRequest`` properties under the reference's spelling.

    Keys match without regard to case, as Go's encoding/json fills a struct: the three spellings in use
    reach a real control plane alike (the SDK's ``{"grantType": "app_token", "AppId", "AppSecret"}``, the
    2.20 docs' ``clientId``, the reference's ``clientID``/``appID``). Other keys and nulls are ignored;
    of two spellings of one field the later wins; a value that is not a string is refused.
    """
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        raise BadTokenRequest(
            "the request body is not JSON", '{"grantType": "client_credentials", ...}'
        ) from None
    if not isinstance(request, dict):
        raise BadTokenRequest("the request body is not a JSON object", '{"grantType": ..., ...}')
    fields: dict[str, str] = {}
    for key, value in request.items():
        name = _FIELDS.get(key.lower())
        if name is None or value is None:
            continue
        if not isinstance(value, str):
            raise BadTokenRequest(f"{key} is not a string", _TAKES)
        fields[name] = value
    return fields


def grant(creds: Credentials, body: bytes, now: float) -> str:
    """``POST /api/v1/token``: an access token for the lab's application, or :class:`BadTokenRequest`."""
    fields = token_request(body)
    grant_type = fields.get("grantType", "")
    if grant_type not in reference.GRANT_TYPES:
        raise BadTokenRequest(
            f"grantType {grant_type!r} is not one of the reference's values", ", ".join(reference.GRANT_TYPES)
        )
    if grant_type in _NOT_HONOURED:
        raise BadTokenRequest(f"grantType {grant_type}: {_NOT_HONOURED[grant_type]}", _TAKES)
    id_field, secret_field = reference.GRANTS_SERVED[grant_type]
    client, secret = fields.get(id_field), fields.get(secret_field)
    if client is None or secret is None:
        raise BadTokenRequest(f"grantType {grant_type} needs {id_field} and {secret_field}", _TAKES)
    if not creds.matches(client, secret):
        raise BadTokenRequest("invalid client credentials", "the lab's keys/runai-rest/client-secret")
    return issue(creds, now)
