"""The lab's egress key: ``.lab/<lab>/keys/egress/hmac-sha256.key``, mode 0400, in a directory of mode
0700, never in git or an image (as the munge and JWT keys of :mod:`lab.bringup.keys`).

The file holds the key exactly as the collector's ``hmac_key`` must carry it: 64 lower-case hex
characters made by :mod:`secrets` (256 bits), no newline. The processor uses the string's bytes as they
are, so those 64 ASCII bytes are the key, twice the processor's minimum. A key that would read as a
YAML number (all digits, or digits ``e`` digits) is never made, so that a configuration file or an
environment variable carries it as the same string.

Rotation writes a new key to a temporary file beside the old one and renames it into place: a reader
sees the old key or the new one, never a part. Every pseudonym made with the key changes from that
instant, and the old key is not kept: pseudonyms made with it cannot be revealed any more.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from lab import contract
from lab.egress.pseudonyms import HASH_FUNCTION, MIN_KEY_BYTES
from lab.paths import atomic_write

KEY_FILE = f"{HASH_FUNCTION}.key"
KEY_HEX_BYTES = 32  # secrets.token_hex(32): 64 hex characters
_YAML_NUMBER = re.compile(r"[0-9]+(e[0-9]+)?")
_KEY_TEXT = re.compile(rb"[\x21-\x7e]+")  # printable ASCII without blanks: what a config line carries


class EgressKeyError(RuntimeError):
    """An egress key that is missing, unsafe or unusable; the message names the file and the fix."""


def key_path(lab: str) -> Path:
    """Where lab ``lab`` keeps its egress key."""
    return contract.egress_key_dir(lab) / KEY_FILE


def new_key() -> bytes:
    """A fresh key: 64 hex characters that no YAML reader takes for a number."""
    while True:
        text = secrets.token_hex(KEY_HEX_BYTES)
        if not _YAML_NUMBER.fullmatch(text):
            return text.encode("ascii")


def load(lab: str) -> bytes:
    """Lab ``lab``'s key; refused when missing, readable by group or others, or unusable."""
    path = key_path(lab)
    rotate = f"`lab egress rotate-key --lab {lab}`"
    if not path.exists():
        raise EgressKeyError(
            f"{path}: no egress key. Fix: {rotate} (or `--blueprint FILE` for a lab that is down) makes one."
        )
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise EgressKeyError(
            f"{path} has mode {mode:04o}: others can read the egress key, and with it reverse every "
            f"pseudonym.\nFix: chmod 0400 {path}, then {rotate} (whoever read it can reverse the "
            "pseudonyms made with it)."
        )
    try:
        data = path.read_bytes()
    except OSError as error:
        raise EgressKeyError(f"{path}: cannot read the egress key: {error.strerror}.") from error
    if len(data) < MIN_KEY_BYTES or not _KEY_TEXT.fullmatch(data):
        raise EgressKeyError(
            f"{path}: not an egress key: the processor needs at least {MIN_KEY_BYTES} bytes of printable "
            f"ASCII without blanks or a newline (found {len(data)} bytes). Fix: {rotate}."
        )
    return data


def rotate(lab: str) -> Path:
    """Write a new key for lab ``lab`` atomically (temporary file, then rename), mode 0400."""
    path = key_path(lab)
    _private_directory(path.parent)
    atomic_write(path, new_key().decode("ascii"), mode=0o400)
    return path


def ensure(lab: str) -> bytes:
    """Lab ``lab``'s key, made first when there is none."""
    if not key_path(lab).exists():
        rotate(lab)
    return load(lab)


def _private_directory(directory: Path) -> None:
    """``directory`` and the lab's ``keys/`` above it exist, mode 0700."""
    for level in (directory.parent, directory):
        level.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(level, 0o700)
