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
