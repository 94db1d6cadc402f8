"""Talking to the lab's slurmrestd from the host: tokens from slurmctld, authenticated requests."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from docker.models.containers import Container

API_VERSION = "v0.0.42"  # the newest data parser version Slurm 24.11 serves


class RestError(RuntimeError):
    """slurmrestd refused or failed a request; the message carries its status and errors."""


@dataclass(frozen=True)
class Credentials:
    user: str
    token: str

    def headers(self) -> dict[str, str]:
        return {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self.token}


def issue_token(controller: Container, user: str, lifespan_s: int = 3600) -> Credentials:
    """A JWT for ``user`` signed by slurmctld (`scontrol token`, run as root on the controller)."""
    result = controller.exec_run(["scontrol", "token", f"username={user}", f"lifespan={lifespan_s}"])
    output = result.output.decode(errors="replace").strip()
    if result.exit_code != 0 or "SLURM_JWT=" not in output:
        raise RestError(f"scontrol token for {user!r} failed (exit {result.exit_code}): {output}")
    return Credentials(user=user, token=output.split("SLURM_JWT=", 1)[1].strip())


def request(
    base_url: str,
    path: str,
    credentials: Credentials | None,
    method: str = "GET",
    body: dict[str, Any] | None = None,
    timeout_s: float = 10,
) -> tuple[int, dict[str, Any]]:
    """Send one request; returns (HTTP status, decoded JSON body or {})."""
    headers = {"Accept": "application/json"}
    if credentials is not None:
        headers.update(credentials.headers())
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(f"{base_url}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as response:
            return response.status, _decode(response.read())
    except urllib.error.HTTPError as error:
        return error.code, _decode(error.read())
    except (urllib.error.URLError, OSError) as error:
        raise RestError(f"{method} {base_url}{path}: {error}") from error


def ping(base_url: str, credentials: Credentials | None) -> tuple[int, dict[str, Any]]:
    return request(base_url, f"/slurm/{API_VERSION}/ping", credentials)


def _decode(raw: bytes) -> dict[str, Any]:
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {"raw": raw.decode(errors="replace")[:500]}
    return decoded if isinstance(decoded, dict) else {"value": decoded}
