"""The pinned exporter's own Prometheus rules, as a site would load them: `monitoring/prometheus/alerts.yml`
and `rules.yml` of the tag, read from the tag archive at install time and never copied into the
repository (signals/alerts.md, "The exporter's own rules").

The files go to the state root's cache unmodified under the exporter's name and version
(``slurm_exporter-v1.8.4-alerts.yml``), where the prometheus role installs them beside the lab's own
(``prometheus_extra_rule_files``) and the promtool tests find them (tests/rules/). Where one misfires
on the lab the override sits beside it, not in it: the lab's Alertmanager route (lab/bringup/render.py).

    python3 -m lab.slurm_exporter.upstream_rules DIR   # the files into DIR (the promtool tests' input)
"""

from __future__ import annotations

import sys
import tarfile
import tempfile
from pathlib import Path

from lab import versions
from lab.paths import state_root
from lab.slurm_exporter.binary import DEFAULT_ARCHIVE, ExporterError, verify_archive

# Member of the tag archive → the name it is installed under.
MEMBERS: dict[str, str] = {
    f"{versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/monitoring/prometheus/alerts.yml": (
        f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}-alerts.yml"
    ),
    f"{versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/monitoring/prometheus/rules.yml": (
        f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}-rules.yml"
    ),
}


def cache_dir() -> Path:
    return state_root() / "cache" / f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}" / "rules"


def extract(archive: Path, into: Path) -> list[Path]:
    """The tag's rule files from ``archive`` (checked against the pin first) into ``into``, unmodified;
    :class:`ExporterError` naming the archive and the fix when it is not the pinned one or lacks them."""
    verify_archive(archive, versions.SLURM_EXPORTER_ARCHIVE_SHA256)
    bodies: dict[str, bytes] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member, name in MEMBERS.items():
            try:
                stream = tar.extractfile(member)
            except KeyError:
                stream = None
            if stream is None:
                raise ExporterError(
                    f"{archive}: no {member} inside. Fix: use the unmodified tag archive "
                    f"{versions.SLURM_EXPORTER_ARCHIVE} (../shared/vendor/PROVENANCE.md)."
                )
            bodies[name] = stream.read()
    into.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, body in bodies.items():
        # Written beside, then renamed: a reader never sees half a file.
        with tempfile.NamedTemporaryFile(dir=into, delete=False, prefix=f".{name}.") as out:
            out.write(body)
        target = into / name
        Path(out.name).replace(target)
        target.chmod(0o644)
        written.append(target)
    return written


def ensure(archive: Path = DEFAULT_ARCHIVE) -> list[Path]:
    """The cached rule files, else those of ``archive``, extracted once into :func:`cache_dir`."""
    cached = [cache_dir() / name for name in MEMBERS.values()]
    if all(path.is_file() for path in cached):
        return cached
    return extract(archive, cache_dir())


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: python3 -m lab.slurm_exporter.upstream_rules DIR\n{__doc__}", file=sys.stderr)
        return 2
    try:
        for path in extract(DEFAULT_ARCHIVE, Path(argv[0])):
            print(path)
    except ExporterError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
