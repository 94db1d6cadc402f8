"""The names both the pinned exporter and Slurm's own plugin emit: read from the exporter's tag archive and
the committed JSON, they are exactly the list signals/slurm-native.md gives."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
from pathlib import Path

import pytest

from lab import versions
from lab.paths import PROJECT_ROOT
from lab.slurm_native import source_families
from lab.slurm_native.shared_names import (
    DEFAULT_ARCHIVE,
    ArchiveError,
    exporter_family_names,
    names_in_go,
    shared_names,
)
from lab.slurm_native.source_families import read_families

FAMILIES_JSON = source_families.PINNED_FAMILIES
SIGNALS = PROJECT_ROOT / "signals" / "slurm-native.md"
SECTION = "## Names shared with slurm_exporter v1.8.4"


def test_names_in_go_reads_both_registration_shapes() -> None:
    go = """
	alloc: prometheus.NewDesc("slurm_nodes_alloc", "Allocated nodes", labelnames, nil),
	info: prometheus.NewDesc(
		"slurm_node_drain_reason_info",
		"Information", labels, nil),
var cacheAgeGauge = prometheus.NewGaugeVec(
	prometheus.GaugeOpts{
		Name: "slurm_exporter_cache_age_seconds",
		Help: "Age",
	}, []string{"cache"})
"""
    assert names_in_go(go) == {
        "slurm_nodes_alloc",
        "slurm_node_drain_reason_info",
        "slurm_exporter_cache_age_seconds",
    }


def test_the_pinned_archive_gives_the_exporters_145_slurm_families() -> None:
    names = exporter_family_names(DEFAULT_ARCHIVE)
    assert len(names) == 145, "signals/slurm.md: 145 slurm_* families at v1.8.4"
    assert all(name.startswith("slurm_") for name in names)


def _archive(path: Path, member: str, body: bytes) -> Path:
    """A tar.gz of one file under the pinned archive's prefix."""
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(f"{versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/{member}")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return path


def test_an_archive_that_is_not_the_pinned_one_is_refused(tmp_path: Path) -> None:
    archive = _archive(
        tmp_path / "other.tar.gz", "internal/collector/x.go", b'prometheus.NewDesc("slurm_x", "x", nil, nil)'
    )
    with pytest.raises(ArchiveError, match=r"is not the pinned .* Fix: use the unmodified tag archive"):
        exporter_family_names(archive)


def test_an_archive_without_collectors_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _archive(tmp_path / "empty.tar.gz", "README.md", b"package main\n")
    monkeypatch.setattr(
        versions, "SLURM_EXPORTER_ARCHIVE_SHA256", hashlib.sha256(archive.read_bytes()).hexdigest()
    )
    with pytest.raises(ArchiveError, match=r"no family registered under"):
        exporter_family_names(archive)


def test_shared_names_are_sorted_and_in_both() -> None:
    assert shared_names(["slurm_b", "slurm_a", "slurm_c"], {"slurm_c", "slurm_a", "x"}) == [
        "slurm_a",
        "slurm_c",
    ]


def _documented_shared(text: str) -> list[str]:
    """First-column names of the table in the doc's shared-names section."""
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [row[1] for row in re.finditer(r"^\| `(slurm_\w+)` \|", section, re.M)]


def test_the_shared_names_are_the_list_the_signals_doc_gives() -> None:
    native = [family.name for family in read_families(FAMILIES_JSON)]
    computed = shared_names(native, exporter_family_names(DEFAULT_ARCHIVE))
    documented = _documented_shared(SIGNALS.read_text(encoding="utf-8"))
    assert documented, "an empty table must not pass"
    assert documented == computed
