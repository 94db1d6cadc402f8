"""The tag archives the lab builds from (../shared/vendor, or a path the user names): one check that a
file is the pinned archive before anything is unpacked from it, with an error that names the file,
what was wrong and the fix. Each construct raises its own error type, so its callers need not know
this module."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PinnedArchive:
    what: str  # as the error says it: "the exporter's source archive"
    name: str  # its file name in ../shared/vendor (lab/versions.py)
    recreate: str  # how to make the unmodified archive from the tag: "`git archive …`"
    elsewhere: str = ""  # how to name another path: "--exporter-source PATH or $LAB_…"


def verify(archive: Path, expected_sha256: str, pinned: PinnedArchive, error: type[Exception]) -> None:
    """Raise ``error`` unless ``archive`` is a readable file whose sha256 is ``expected_sha256``."""
    if not archive.exists():
        elsewhere = f", or name one with {pinned.elsewhere}" if pinned.elsewhere else ""
        raise error(
            f"{archive}: {pinned.what} is missing. Fix: put the unmodified tag archive {pinned.name} there "
            f"(sha256 {expected_sha256}, see ../shared/vendor/PROVENANCE.md){elsewhere}."
        )
    try:
        with archive.open("rb") as stream:
            digest = hashlib.file_digest(stream, "sha256").hexdigest()
    except OSError as failure:
        raise error(
            f"{archive}: cannot read {pinned.what} ({failure.strerror or failure}). "
            "Fix: make it a readable regular file."
        ) from failure
    if digest != expected_sha256:
        raise error(
            f"{archive}: sha256 {digest} is not the pinned {expected_sha256} of {pinned.name} "
            f"(lab/versions.py). Fix: use the unmodified tag archive ({pinned.recreate}); "
            "another tree is not the pinned one."
        )
