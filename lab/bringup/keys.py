"""Per-lab keys: the munge key, the JWT signing key and the accounting database password.

Generated once per lab at `lab up`, kept under the lab's state directory (0700) as files of mode
0400, handed to containers only by provisioning, and never written into an image or the repository.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MUNGE_KEY_BYTES = 1024  # mungekey's default key length
JWT_KEY_BYTES = 32  # HS256 key length the Slurm JWT docs generate (dd bs=32 count=1)


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


def remove(directory: Path) -> list[Path]:
    removed = []
    for name in ("munge.key", "jwt_hs256.key", "mariadb.password"):
        path = directory / name
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed
