"""The egress key: made with secrets, 64 hex characters, mode 0400 under .lab/<lab>/keys/egress/ (0700);
loading refuses a missing, group- or world-readable or unusable key, naming the file and the fix; rotation
replaces it atomically."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lab.egress import key
from lab.egress.pseudonyms import MIN_KEY_BYTES


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_key_lives_in_the_labs_state(isolated_state: Path) -> None:
    assert key.key_path("lab1") == isolated_state / "lab1" / "keys" / "egress" / "hmac-sha256.key"


def test_rotate_makes_a_private_key(isolated_state: Path) -> None:
    path = key.rotate("lab1")
    assert _mode(path) == 0o400
    assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
    data = key.load("lab1")
    assert len(data) == 64 >= 2 * MIN_KEY_BYTES
    assert all(c in b"0123456789abcdef" for c in data), "hex text, no newline"
    assert [p.name for p in path.parent.iterdir()] == ["hmac-sha256.key"], "no temporary file left"


def test_rotation_replaces_the_key(isolated_state: Path) -> None:
    first = key.ensure("lab1")
    assert key.ensure("lab1") == first, "ensure keeps a key that is there"
    key.rotate("lab1")
    assert key.load("lab1") != first
    assert _mode(key.key_path("lab1")) == 0o400


def test_rotation_renames_a_whole_file_into_place(
    isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key.rotate("lab1")
    old = key.load("lab1")
    renamed: list[tuple[str, str]] = []
    real_replace = os.replace

    def replace(source: str, target: str) -> None:
        assert Path(source).read_bytes() != old and len(Path(source).read_bytes()) == 64
        renamed.append((Path(source).name, Path(target).name))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    key.rotate("lab1")
    assert len(renamed) == 1 and renamed[0][1] == "hmac-sha256.key"
    assert renamed[0][0].startswith(".hmac-sha256.key.")


def test_a_missing_key_names_the_file_and_the_fix(isolated_state: Path) -> None:
    with pytest.raises(key.EgressKeyError) as raised:
        key.load("lab1")
    message = str(raised.value)
    assert str(key.key_path("lab1")) in message
    assert "lab egress rotate-key --lab lab1" in message


@pytest.mark.parametrize("mode", [0o440, 0o404, 0o644, 0o600 | 0o004])
def test_a_key_others_can_read_is_refused(isolated_state: Path, mode: int) -> None:
    path = key.rotate("lab1")
    path.chmod(mode)
    with pytest.raises(key.EgressKeyError) as raised:
        key.load("lab1")
    message = str(raised.value)
    assert f"{path} has mode {mode:04o}" in message
    assert f"chmod 0400 {path}" in message and "lab egress rotate-key --lab lab1" in message


@pytest.mark.parametrize(
    "content", [b"short", b"a" * 64 + b"\n", b"a" * 31, b"a b" * 20, "ü".encode() * 40], ids=repr
)
def test_an_unusable_key_is_refused(isolated_state: Path, content: bytes) -> None:
    path = key.key_path("lab1")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    path.chmod(0o400)
    with pytest.raises(
        key.EgressKeyError, match=r"not an egress key.*Fix: `lab egress rotate-key --lab lab1`"
    ):
        key.load("lab1")


def test_a_key_of_the_minimum_length_is_used_as_it_is(isolated_state: Path) -> None:
    path = key.key_path("lab1")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"k" * MIN_KEY_BYTES)
    path.chmod(0o400)
    assert key.load("lab1") == b"k" * MIN_KEY_BYTES


def test_new_keys_never_read_as_a_yaml_number(monkeypatch: pytest.MonkeyPatch) -> None:
    made = iter(["1" * 64, "12e" + "3" * 61, "ab" * 32])
    monkeypatch.setattr(key.secrets, "token_hex", lambda _bytes: next(made))
    assert key.new_key() == b"ab" * 32
