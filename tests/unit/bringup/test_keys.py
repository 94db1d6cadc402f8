import base64
import hashlib
import hmac
import json
import stat
from pathlib import Path

import pytest

from lab.bringup import keys


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_are_made_once_with_mode_0400_in_a_0700_directory(tmp_path: Path) -> None:
    directory = tmp_path / "keys"
    first = keys.ensure(directory)
    assert _mode(directory) == 0o700
    for path in (first.munge_key, first.jwt_key, first.db_password):
        assert _mode(path) == 0o400
    assert first.munge_key.stat().st_size == keys.MUNGE_KEY_BYTES
    assert first.jwt_key.stat().st_size == keys.JWT_KEY_BYTES
    before = first.munge_key.read_bytes()
    second = keys.ensure(directory)
    assert second.munge_key.read_bytes() == before


def test_each_lab_gets_its_own_keys(tmp_path: Path) -> None:
    one = keys.ensure(tmp_path / "one")
    two = keys.ensure(tmp_path / "two")
    assert one.munge_key.read_bytes() != two.munge_key.read_bytes()
    assert one.jwt_key.read_bytes() != two.jwt_key.read_bytes()


def test_a_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    made = keys.ensure(tmp_path / "keys")
    made.jwt_key.chmod(0o644)
    with pytest.raises(keys.KeysError, match="chmod 0400"):
        keys.ensure(tmp_path / "keys")


def test_remove_deletes_only_the_keys(tmp_path: Path) -> None:
    made = keys.ensure(tmp_path / "keys")
    (tmp_path / "keys" / "other").write_text("kept")
    removed = keys.remove(tmp_path / "keys")
    assert sorted(removed) == sorted([made.munge_key, made.jwt_key, made.db_password])
    assert (tmp_path / "keys" / "other").exists()


def test_keys_are_never_tracked_by_git() -> None:
    ignored = Path(__file__).resolve().parents[3].joinpath(".gitignore").read_text()
    assert "/.lab/" in ignored.splitlines()


def _claims(token: str) -> dict[str, object]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))  # type: ignore[no-any-return]


def test_the_metrics_token_is_an_hs256_jwt_of_the_user_signed_with_the_lab_key(tmp_path: Path) -> None:
    lab = keys.ensure(tmp_path / "keys")
    path = keys.ensure_metrics_token(tmp_path / "keys", lab.jwt_key, "prometheus", now=1_800_000_000)
    token = path.read_text(encoding="ascii")
    header, payload, signature = token.split(".")
    expected = hmac.new(lab.jwt_key.read_bytes(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)) == expected
    assert _claims(token) == {"exp": 1_800_000_000 + 365 * 86400, "iat": 1_800_000_000, "sun": "prometheus"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o400


def test_the_metrics_token_is_kept_while_fresh_and_made_anew_near_its_end(tmp_path: Path) -> None:
    lab = keys.ensure(tmp_path / "keys")
    first = keys.ensure_metrics_token(
        tmp_path / "keys", lab.jwt_key, "prometheus", now=1_800_000_000
    ).read_text()
    later = 1_800_000_000 + 300 * 86400  # 65 days left
    assert (
        keys.ensure_metrics_token(tmp_path / "keys", lab.jwt_key, "prometheus", now=later).read_text()
        == first
    )
    near_end = 1_800_000_000 + 340 * 86400  # 25 days left
    renewed = keys.ensure_metrics_token(
        tmp_path / "keys", lab.jwt_key, "prometheus", now=near_end
    ).read_text()
    assert _claims(renewed)["iat"] == near_end
