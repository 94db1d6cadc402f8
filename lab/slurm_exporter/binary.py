"""The pinned Slurm exporter binary: built once, cached by version and source, then copied to the
controller by provisioning (role slurm_exporter).

Two ways, in this order:
1. ``go install github.com/sckyzo/slurm_exporter/cmd/slurm_exporter@v1.8.4``: what a site with ordinary
   access to the Go module proxy does; the toolchain checks the module against the checksum database.
2. When the proxy refuses the module: ``go build`` of the tag's source archive (by default the one in
   ``../shared/vendor/``, or ``--exporter-source`` / ``$LAB_EXPORTER_SOURCE``). The archive's sha256 must
   equal the pin in ``lab/versions.py``; ``-mod=readonly`` makes the tag's own ``go.sum`` check every
   dependency, and the ``-X`` flags of the tag's ``.goreleaser.yaml`` make ``--version`` read as a
   release binary's.
Either way ``CGO_ENABLED=0`` gives a static binary that runs in any of the lab's images.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from lab import archives, versions
from lab.paths import VENDOR_DIR, state_root
from lab.progress import Progress

GO_BUILD_TIMEOUT_S = 900  # a cold module cache and a busy 2-core machine: about 45 s measured, with margin
SOURCE_ENV = "LAB_EXPORTER_SOURCE"
GO_FALLBACK = Path("/usr/local/go/bin/go")  # where Go's own tarball installs it, often not on PATH
DEFAULT_ARCHIVE = VENDOR_DIR / versions.SLURM_EXPORTER_ARCHIVE
_VERSION_PACKAGE = "github.com/prometheus/common/version"


class ExporterError(RuntimeError):
    """The exporter cannot be had; the message says why and what to do."""


@dataclass(frozen=True)
class ExporterBuild:
    """A usable binary and how it was made (``lab status`` prints ``how``)."""

    binary: Path
    how: str  # "go install …" or "go build of <archive> (sha256 …)"
    seconds: float  # the build's wall time; 0.0 when the cached binary was used
    cached: bool = False


def cache_dir() -> Path:
    return state_root() / "cache" / f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}"


def _cached(way: str) -> ExporterBuild | None:
    record = cache_dir() / way / "build.json"
    binary = cache_dir() / way / "slurm_exporter"
    if not (record.is_file() and binary.is_file()):
        return None
    data = json.loads(record.read_text(encoding="utf-8"))
    return ExporterBuild(binary, str(data["how"]), float(data["seconds"]), cached=True)


def _store(way: str, built: Path, how: str, seconds: float) -> ExporterBuild:
    target_dir = cache_dir() / way
    target_dir.mkdir(parents=True, exist_ok=True)
    binary = target_dir / "slurm_exporter"
    shutil.move(str(built), binary)
    build = ExporterBuild(binary, how, round(seconds, 1))
    record = {k: str(v) if isinstance(v, Path) else v for k, v in asdict(build).items() if k != "cached"}
    (target_dir / "build.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return build


def _archive_way() -> str:
    return f"archive-{versions.SLURM_EXPORTER_ARCHIVE_SHA256[:12]}"


def ensure_binary(progress: Progress, source: Path | None = None) -> ExporterBuild:
    """The cached binary, else one built the first way that works; :class:`ExporterError` otherwise."""
    named = source or (Path(os.environ[SOURCE_ENV]) if os.environ.get(SOURCE_ENV) else None)
    for way in ("module", _archive_way()):
        if (hit := _cached(way)) is not None:
            return hit
    go = find_go()
    refused = _go_install(go, progress)
    if isinstance(refused, ExporterBuild):
        return refused
    archive = named or DEFAULT_ARCHIVE
    progress.say(f"the module proxy refused the exporter ({refused}); building from {archive}")
    return _build_from_archive(go, archive, progress)


def go_path(which: Callable[[str], str | None] = shutil.which, fallback: Path = GO_FALLBACK) -> str | None:
    """The Go toolchain the build uses: `go` on PATH, else GO_FALLBACK when it exists."""
    return which("go") or (str(fallback) if fallback.is_file() else None)


def find_go() -> str:
    go = go_path()
    if go is None:
        raise ExporterError(
            f"no Go toolchain: neither `go` on PATH nor {GO_FALLBACK}. Fix: install Go ≥ 1.26 "
            "(the exporter's go.mod says go 1.26.0), or `lab up --no-exporter` for a lab without it."
        )
    return go


def _go_env(**extra: str) -> dict[str, str]:
    # GOTOOLCHAIN=local: never download another toolchain; the one here must do.
    return {**os.environ, "CGO_ENABLED": "0", "GOTOOLCHAIN": "local", **extra}


def _go_install(go: str, progress: Progress) -> ExporterBuild | str:
    """The binary from the module proxy, or why the proxy could not give it (one line)."""
    module = f"{versions.SLURM_EXPORTER_MODULE}@{versions.SLURM_EXPORTER_VERSION}"
    with tempfile.TemporaryDirectory(prefix="slurm-exporter-gobin-") as gobin:
        began = time.monotonic()
        with progress.step(f"go install {module}"):
            result = _run([go, "install", "-trimpath", module], _go_env(GOBIN=gobin), cwd=Path(gobin))
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines()
            return lines[-1].strip() if lines else f"exit {result.returncode}, no output"
        return _store(
            "module", Path(gobin) / "slurm_exporter", f"go install {module}", time.monotonic() - began
        )


_ARCHIVE = archives.PinnedArchive(
    "the exporter's source archive",
    versions.SLURM_EXPORTER_ARCHIVE,
    f"`git archive --format=tar.gz --prefix={versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/ "
    f"{versions.SLURM_EXPORTER_VERSION}`",
    f"--exporter-source PATH or ${SOURCE_ENV}",
)


def verify_archive(archive: Path, expected_sha256: str) -> None:
    """Raise :class:`ExporterError` unless ``archive`` is a readable file with the pinned sha256."""
    archives.verify(archive, expected_sha256, _ARCHIVE, ExporterError)


def _build_from_archive(go: str, archive: Path, progress: Progress) -> ExporterBuild:
    verify_archive(archive, versions.SLURM_EXPORTER_ARCHIVE_SHA256)
    with tempfile.TemporaryDirectory(prefix="slurm-exporter-src-") as work:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(work, filter="data")  # no absolute paths, links out of the tree or devices
        tree = Path(work) / versions.SLURM_EXPORTER_ARCHIVE_PREFIX
        if not (tree / "go.mod").is_file():
            raise ExporterError(f"{archive}: no {versions.SLURM_EXPORTER_ARCHIVE_PREFIX}/go.mod inside.")
        output = Path(work) / "slurm_exporter"
        ldflags = " ".join(
            ["-s", "-w"]
            + [
                f"-X {_VERSION_PACKAGE}.{key}={value}"
                for key, value in (
                    ("Version", versions.SLURM_EXPORTER_VERSION.lstrip("v")),
                    ("Revision", versions.SLURM_EXPORTER_COMMIT),
                    ("Branch", versions.SLURM_EXPORTER_BRANCH),
                )
            ]
        )
        argv = [go, "build", "-trimpath", "-mod=readonly", "-ldflags", ldflags, "-o", str(output)]
        began = time.monotonic()
        with progress.step(f"go build of {archive.name} (CGO_ENABLED=0, -trimpath, -mod=readonly)"):
            result = _run([*argv, "./cmd/slurm_exporter"], _go_env(), cwd=tree)
        if result.returncode != 0:
            tail = " ".join(result.stderr.strip().splitlines()[-5:]) or "(no output)"
            raise ExporterError(
                f"`go build` of {archive} failed: {tail}\nFix: the Go module proxy must serve the "
                "exporter's dependencies (GOPROXY), and Go must be ≥ 1.26."
            )
        digest = versions.SLURM_EXPORTER_ARCHIVE_SHA256
        how = f"go build of {archive} (sha256 {digest[:12]}…, tag {versions.SLURM_EXPORTER_VERSION})"
        return _store(_archive_way(), output, how, time.monotonic() - began)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=GO_BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired as error:
        raise ExporterError(f"`{' '.join(argv[:2])}` took longer than {GO_BUILD_TIMEOUT_S} s") from error
