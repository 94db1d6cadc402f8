"""The one check of a tag archive before the lab unpacks it: the pinned hash passes; a missing,
unreadable or other file raises the caller's error naming the file, the hashes and the fix."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lab import archives

PINNED = archives.PinnedArchive(
    "the thing's source archive", "thing-1.0.tar.gz", "`git archive v1.0`", "--src PATH"
)


class ThingError(Exception):
    pass


def _archive(path: Path) -> str:
    path.write_bytes(b"not really a tarball")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_pinned_hash_passes(tmp_path: Path) -> None:
    archive = tmp_path / "thing.tar.gz"
    archives.verify(archive, _archive(archive), PINNED, ThingError)


def test_a_missing_archive_names_the_file_the_pin_and_both_fixes(tmp_path: Path) -> None:
    absent = tmp_path / "absent.tar.gz"
    with pytest.raises(ThingError) as raised:
        archives.verify(absent, "a" * 64, PINNED, ThingError)
    message = str(raised.value)
    assert message.startswith(f"{absent}: the thing's source archive is missing")
    assert "thing-1.0.tar.gz" in message and "a" * 64 in message and "PROVENANCE.md" in message
    assert message.endswith("or name one with --src PATH.")


def test_a_missing_archive_without_another_way_names_only_the_vendor_folder(tmp_path: Path) -> None:
    pinned = archives.PinnedArchive("the thing's source archive", "thing-1.0.tar.gz", "`git archive v1.0`")
    with pytest.raises(ThingError) as raised:
        archives.verify(tmp_path / "absent.tar.gz", "a" * 64, pinned, ThingError)
    assert "name one with" not in str(raised.value)


def test_another_file_names_both_hashes_and_how_to_make_the_pinned_one(tmp_path: Path) -> None:
    archive = tmp_path / "thing.tar.gz"
    actual = _archive(archive)
    with pytest.raises(ThingError) as raised:
        archives.verify(archive, "0" * 64, PINNED, ThingError)
    message = str(raised.value)
    assert str(archive) in message and actual in message and "0" * 64 in message
    assert "`git archive v1.0`" in message


def test_an_unreadable_archive_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(ThingError, match="cannot read the thing's source archive"):
        archives.verify(tmp_path, "0" * 64, PINNED, ThingError)  # a directory: open() fails even for root
