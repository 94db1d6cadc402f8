"""Family names that both the pinned exporter (SckyzO/slurm_exporter v1.8.4) and Slurm's own OpenMetrics
plugin emit: the same name for two different measurements, which is why the lab renames Slurm's own
families on scrape (signals/slurm-native.md, "In the lab's Prometheus").

The exporter's names are read from its unmodified tag archive (checked against the pin in
``lab/versions.py`` first), from the Go source that registers them, e.g. in
``internal/collector/nodes.go``:

    alloc: prometheus.NewDesc("slurm_nodes_alloc", "Allocated nodes", labelnames, nil),

and, for its own vectors, ``prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slurm_exporter_…"``.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterable
from pathlib import Path

from lab import archives, versions
from lab.paths import VENDOR_DIR

DEFAULT_ARCHIVE = VENDOR_DIR / versions.SLURM_EXPORTER_ARCHIVE
# Where the tag registers families: every collector, and the command's main package (which registers
# only client_golang's own collectors at v1.8.4, whose names are not in the archive).
SOURCE_DIRS = ("internal/collector/", "cmd/slurm_exporter/")
_DESC = re.compile(r'prometheus\.NewDesc\(\s*"([^"]+)"')
_OPTS = re.compile(
    r'prometheus\.New(?:Gauge|Counter|Histogram|Summary)(?:Vec)?\(\s*prometheus\.\w+Opts\{[^}]*?\bName:\s*"([^"]+)"',
    re.S,
)
_ARCHIVE = archives.PinnedArchive(
    "the exporter's source archive",
    versions.SLURM_EXPORTER_ARCHIVE,
    f"`git archive --format=tar.gz --prefix={versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/ "
    f"{versions.SLURM_EXPORTER_VERSION}`",
)


class ArchiveError(RuntimeError):
    """The exporter's names cannot be read from the archive; the message names it and the fix."""


def names_in_go(text: str) -> set[str]:
    """Family names a Go file registers with ``prometheus.NewDesc`` or a ``prometheus.*Opts{Name: …}``."""
    return set(_DESC.findall(text)) | set(_OPTS.findall(text))


def exporter_family_names(archive: Path = DEFAULT_ARCHIVE) -> set[str]:
    """Every family name the pinned exporter's Go source registers (its tests left out)."""
    archives.verify(archive, versions.SLURM_EXPORTER_ARCHIVE_SHA256, _ARCHIVE, ArchiveError)
    prefix = f"{versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/"
    names: set[str] = set()
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            inner = member.name.removeprefix(prefix)
            if not (member.isfile() and inner.startswith(SOURCE_DIRS) and inner.endswith(".go")):
                continue
            if inner.endswith("_test.go"):
                continue
            stream = tar.extractfile(member)
            if stream is not None:
                names |= names_in_go(stream.read().decode("utf-8"))
    if not names:
        raise ArchiveError(
            f"{archive}: no family registered under {', '.join(prefix + d for d in SOURCE_DIRS)}. "
            f"Fix: use the unmodified tag archive {versions.SLURM_EXPORTER_ARCHIVE} "
            "(../shared/vendor/PROVENANCE.md)."
        )
    return names


def shared_names(native: Iterable[str], exporter: Iterable[str]) -> list[str]:
    """The names in both, sorted."""
    return sorted(set(native) & set(exporter))
