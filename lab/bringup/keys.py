"""Per-lab keys: the munge key, the JWT signing key and the accounting database password, and on a lab
whose slurmctld serves its own metrics, the JWT Prometheus reads them with.

Generated once per lab at `lab up`, kept under the lab's state directory (0700) as files of mode
0400, handed to containers only by provisioning, and never written into an image or the repository.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MUNGE_KEY_BYTES = 1024  # mungekey's default key length
JWT_KEY_BYTES = 32  # HS256 key length the Slurm JWT docs generate (dd bs=32 count=1)
METRICS_TOKEN = "slurmctld-metrics.jwt"
# The metrics token lives a year and is made anew by `lab up` once it has less than 30 days left: a
# site's secret store rotates such a token; a lab is brought up again long before then.
METRICS_TOKEN_LIFESPAN_S = 365 * 86400
METRICS_TOKEN_RENEW_S = 30 * 86400


class KeysError(RuntimeError):
    """A secret file that is unsafe or unreadable; the message says how to fix it."""


@dataclass(frozen=True)
class LabKeys:
    munge_key: Path
    jwt_key: Path
    db_password: Path


def ensure(directory: Path) -> LabKeys:
    """Create missing secrets in ``directory`` (kept as they are when present) and check modes."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    result = LabKeys(
        munge_key=directory / "munge.key",
        jwt_key=directory / "jwt_hs256.key",
        db_password=directory / "mariadb.password",
    )
    ensure_secret_file(result.munge_key, lambda: secrets.token_bytes(MUNGE_KEY_BYTES))
    ensure_secret_file(result.jwt_key, lambda: secrets.token_bytes(JWT_KEY_BYTES))
    ensure_secret_file(result.db_password, lambda: secrets.token_urlsafe(24).encode("ascii"))
    return result


def refuse_if_readable_by_others(path: Path, what: str = "a lab secret") -> None:
    """A secret file others can read is refused, with the fix."""
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise KeysError(
            f"{path} has mode {mode:04o}: others can read {what}.\n"
            f"Fix: chmod 0400 {path} (or `lab down --purge` to make new keys)."
        )


def ensure_secret_file(path: Path, make: Callable[[], bytes]) -> None:
    """``path`` holds a secret of mode 0400: made by ``make`` when missing, refused when others read it."""
    if path.exists():
        refuse_if_readable_by_others(path)
        return
    data = make()
    # Created 0400 from the first byte: the secret is never readable by others, not even briefly.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def ensure_metrics_token(directory: Path, jwt_key: Path, user: str, now: float | None = None) -> Path:
    """The JWT of ``user`` that slurmctld's metrics endpoints take (MetricsAuthUsers), signed with the
    lab's key as `scontrol token` signs it (HS256; claims ``exp``, ``iat``, ``sun``), mode 0400; kept
    while it has more than METRICS_TOKEN_RENEW_S to live."""
    path = directory / METRICS_TOKEN
    issued = int(time.time() if now is None else now)
    if path.exists():
        refuse_if_readable_by_others(path)
        if _expires(path.read_text(encoding="ascii")) - issued > METRICS_TOKEN_RENEW_S:
            return path
        path.unlink()
    claims = {"exp": issued + METRICS_TOKEN_LIFESPAN_S, "iat": issued, "sun": user}
    ensure_secret_file(path, lambda: hs256_jwt(jwt_key.read_bytes(), claims).encode("ascii"))
    return path


def hs256_jwt(key: bytes, claims: dict[str, object]) -> str:
    def encoded(part: bytes) -> str:
        return base64.urlsafe_b64encode(part).rstrip(b"=").decode("ascii")

    header = encoded(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = encoded(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(key, f"{header}.{payload}".encode("ascii"), hashlib.sha256).digest()
    return f"{header}.{payload}.{encoded(signature)}"


def _expires(token: str) -> int:
    try:
        payload = token.strip().split(".")[1]
        return int(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return 0  # not a token this module made: made anew


def remove(directory: Path) -> list[Path]:
    removed = []
    for name in ("munge.key", "jwt_hs256.key", "mariadb.password", METRICS_TOKEN):
        path = directory / name
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed
