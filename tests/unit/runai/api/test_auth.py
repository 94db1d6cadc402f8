"""Bearer tokens: the lab's JWTs verify; missing, forged, tampered and expired ones do not."""

from __future__ import annotations

import base64
import json

import pytest

from lab.runai.api import auth

CREDS = auth.Credentials(auth.CLIENT_ID, "s3cret", b"k" * auth.SIGNING_KEY_BYTES)
NOW = 1_796_000_000.0


def test_a_token_the_lab_issued_verifies_until_it_expires() -> None:
    token = auth.issue(CREDS, NOW)
    auth.verify(CREDS, f"Bearer {token}", NOW + auth.TOKEN_LIFETIME_S - 1)
    with pytest.raises(auth.Unauthorized, match="expired"):
        auth.verify(CREDS, f"Bearer {token}", NOW + auth.TOKEN_LIFETIME_S)


def _forged_claims(token: str) -> str:
    head, _, signature = token.split(".")
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "x", "exp": 2**40}).encode()).rstrip(b"=")
    return f"{head}.{claims.decode()}.{signature}"


@pytest.mark.parametrize(
    ("header", "words"),
    [
        (None, "missing Authorization header"),
        ("Basic dXNlcjpwYXNz", "is not 'Bearer <accessToken>'"),
        ("Bearer not-a-jwt", "not a JWT"),
        (f"Bearer {auth.issue(auth.Credentials(auth.CLIENT_ID, 's3cret', b'o' * 32), NOW)}", "signature"),
        (f"Bearer {_forged_claims(auth.issue(CREDS, NOW))}", "signature"),
    ],
)
def test_a_bad_bearer_token_is_refused_with_the_reason(header: str | None, words: str) -> None:
    with pytest.raises(auth.Unauthorized, match=words):
        auth.verify(CREDS, header, NOW)


def test_credentials_read_from_the_lab_keys_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    for name, data in auth.secret_files().items():
        (tmp_path / name).write_bytes(data)
    creds = auth.Credentials.read(tmp_path)
    assert creds.matches(auth.CLIENT_ID, (tmp_path / auth.CLIENT_SECRET_FILE).read_text())
    assert not creds.matches(auth.CLIENT_ID, "guess")
    assert len(creds.signing_key) == auth.SIGNING_KEY_BYTES
