"""The Slurm exporter's build: the archive check (good, wrong hash, missing, unreadable) and the order
of the two ways (module proxy first, then the pinned tag archive), with a stand-in `go` that records
what it was asked to do."""

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from lab import versions
from lab.progress import Progress
from lab.slurm_exporter import binary as exporter


def _archive(path: Path, prefix: str = versions.SLURM_EXPORTER_ARCHIVE_PREFIX) -> str:
    with tarfile.open(path, "w:gz") as tar:
        body = b"module github.com/sckyzo/slurm_exporter\n"
        info = tarfile.TarInfo(f"{prefix}/go.mod")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_archive_with_the_pinned_hash_passes(tmp_path: Path) -> None:
    archive = tmp_path / "src.tar.gz"
    exporter.verify_archive(archive, _archive(archive))


def test_a_wrong_hash_names_both_hashes_and_the_fix(tmp_path: Path) -> None:
    archive = tmp_path / "src.tar.gz"
    actual = _archive(archive)
    with pytest.raises(exporter.ExporterError) as raised:
        exporter.verify_archive(archive, "0" * 64)
    message = str(raised.value)
    assert str(archive) in message and actual in message and "0" * 64 in message
    assert "unmodified tag archive" in message


def test_a_missing_archive_says_where_to_put_it(tmp_path: Path) -> None:
    with pytest.raises(exporter.ExporterError, match=r"missing.*--exporter-source"):
        exporter.verify_archive(tmp_path / "absent.tar.gz", "0" * 64)


def test_an_unreadable_archive_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(exporter.ExporterError, match="cannot read"):
        exporter.verify_archive(tmp_path, "0" * 64)  # a directory: open() fails even for root


FAKE_GO = """#!/bin/sh
echo "$*" >> "{log}"
case "$1" in
  install) [ "{install}" = ok ] || {{ echo "go: module lookup: 403 Forbidden" >&2; exit 1; }}
           printf '#!/bin/sh\\necho module\\n' > "$GOBIN/slurm_exporter" ;;
  build) while [ "$1" != -o ]; do shift; done; printf '#!/bin/sh\\necho archive\\n' > "$2" ;;
esac
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def make(install: str) -> Path:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        log = tmp_path / "go.log"
        (bin_dir / "go").write_text(FAKE_GO.format(log=log, install=install))
        (bin_dir / "go").chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
        monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path / "state"))
        monkeypatch.delenv(exporter.SOURCE_ENV, raising=False)
        return log

    return make


def test_the_module_proxy_is_tried_first_and_its_binary_cached(fake_go, tmp_path: Path) -> None:
    log = fake_go("ok")
    built = exporter.ensure_binary(Progress(quiet=True))
    assert built.how.startswith("go install github.com/sckyzo/slurm_exporter/cmd/slurm_exporter@v1.8.4")
    assert log.read_text().splitlines() == [f"install -trimpath {versions.SLURM_EXPORTER_MODULE}@v1.8.4"]
    again = exporter.ensure_binary(Progress(quiet=True))
    assert again.cached and again.binary == built.binary and len(log.read_text().splitlines()) == 1


def test_a_refused_module_falls_back_to_the_archive_with_the_tags_flags(
    fake_go, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_go("refused")
    archive = tmp_path / "exporter.tar.gz"
    monkeypatch.setattr(versions, "SLURM_EXPORTER_ARCHIVE_SHA256", _archive(archive))
    monkeypatch.setenv(exporter.SOURCE_ENV, str(archive))
    built = exporter.ensure_binary(Progress(quiet=True))
    install, build = log.read_text().splitlines()
    assert install.startswith("install ")
    assert build.startswith("build -trimpath -mod=readonly -ldflags -s -w")
    for flag in (
        "-X github.com/prometheus/common/version.Version=1.8.4",
        f"-X github.com/prometheus/common/version.Revision={versions.SLURM_EXPORTER_COMMIT}",
        "-X github.com/prometheus/common/version.Branch=release-1.8",
    ):
        assert flag in build
    assert build.endswith("./cmd/slurm_exporter")
    assert str(archive) in built.how and built.binary.read_text().endswith("echo archive\n")
    record = json.loads((built.binary.parent / "build.json").read_text())
    assert record["how"] == built.how


def test_a_refused_module_and_a_tampered_archive_build_nothing(
    fake_go, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_go("refused")
    archive = tmp_path / "exporter.tar.gz"
    _archive(archive)
    with pytest.raises(exporter.ExporterError, match="is not the pinned"):
        exporter.ensure_binary(Progress(quiet=True), source=archive)
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["install"]
    assert not any(exporter.cache_dir().rglob("slurm_exporter"))
