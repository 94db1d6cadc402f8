"""The exporter's own rule files from its tag archive: unmodified, under the exporter's name and version,
cached; an archive that is not the pinned one, or lacks them, is an error naming the archive and the
fix, and writes nothing."""

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from lab import versions
from lab.slurm_exporter import upstream_rules
from lab.slurm_exporter.binary import DEFAULT_ARCHIVE, ExporterError

PREFIX = versions.SLURM_EXPORTER_ARCHIVE_PREFIX
ALERTS = f"{PREFIX}/monitoring/prometheus/alerts.yml"
RULES = f"{PREFIX}/monitoring/prometheus/rules.yml"


def _archive(path: Path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Pin ``versions`` to an archive made here and point the state root at ``tmp_path``."""
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path / "state"))

    def make(members: dict[str, bytes]) -> Path:
        archive = tmp_path / "src.tar.gz"
        monkeypatch.setattr(versions, "SLURM_EXPORTER_ARCHIVE_SHA256", _archive(archive, members))
        return archive

    return make


def test_the_tags_files_are_written_unmodified_under_the_exporters_name(pinned, tmp_path: Path) -> None:
    archive = pinned({ALERTS: b"groups: [] # alerts\n", RULES: b"groups: [] # rules\n"})
    written = upstream_rules.extract(archive, tmp_path / "out")
    assert [path.name for path in written] == [
        f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}-alerts.yml",
        f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}-rules.yml",
    ]
    assert [path.read_bytes() for path in written] == [b"groups: [] # alerts\n", b"groups: [] # rules\n"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(p.name for p in written)


def test_ensure_extracts_once_then_uses_the_cache(pinned) -> None:
    archive = pinned({ALERTS: b"a\n", RULES: b"r\n"})
    first = upstream_rules.ensure(archive)
    assert all(path.parent == upstream_rules.cache_dir() for path in first)
    archive.unlink()  # the cache answers without the archive
    assert upstream_rules.ensure(archive) == first


def test_an_archive_without_the_rules_names_the_member_and_the_fix(pinned, tmp_path: Path) -> None:
    archive = pinned({ALERTS: b"a\n"})
    with pytest.raises(ExporterError, match=rf"{archive}: no {RULES} inside\. Fix: use the unmodified"):
        upstream_rules.extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-done: not even the file the archive has


def test_a_tampered_archive_writes_nothing(pinned, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = pinned({ALERTS: b"a\n", RULES: b"r\n"})
    monkeypatch.setattr(versions, "SLURM_EXPORTER_ARCHIVE_SHA256", "0" * 64)
    with pytest.raises(ExporterError, match="is not the pinned"):
        upstream_rules.extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_vendored_tag_has_both_files(tmp_path: Path) -> None:
    alerts, rules = upstream_rules.extract(DEFAULT_ARCHIVE, tmp_path)
    assert "alert: SlurmNodeWarning" in alerts.read_text()
    assert "record: cluster:slurm_job_failure_rate:ratio15m" in rules.read_text()
