"""Prometheus' web UI, built once from the tag's ``web/ui`` and cached by version and archive sha256.

Debian's ``prometheus`` package serves a page saying it has no React UI until ``static/react`` exists
under ``/usr/share/prometheus/web``; its ``/usr/share/prometheus/install-ui.sh`` fills that directory
from a release's ``prometheus-web-ui-<version>.tar.gz`` (members ``static/react/…``). This module makes a
tarball of the same layout from the tag's sources (``npm ci``, then the tag's ``build_ui.sh --all``), and
the prometheus role installs it as install-ui.sh does (``prometheus_web_ui_archive_src``).

The build is a convenience for the lab, not part of its contract: :func:`prepare` turns any failure
into one line and ``None``, and the lab comes up with Debian's page instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab import archives, build_step, versions
from lab.bringup import lock
from lab.paths import VENDOR_DIR, state_root
from lab.progress import Progress

SOURCE_ENV = "LAB_PROMETHEUS_UI_SOURCE"
DEFAULT_ARCHIVE = VENDOR_DIR / versions.PROMETHEUS_UI_ARCHIVE
# The tag's web/ui/.nvmrc says v20.5.1: react-scripts 5 and the workspaces need Node ≥ 20 with its npm.
NPM_TIMEOUT_S = 1200  # npm ci of 1,605 packages: 66 s measured on 2 busy cores, with margin
BUILD_TIMEOUT_S = 1200  # build_ui.sh --all: 73 s measured, with margin
# The release tarball's layout (install-ui.sh extracts `static/react` from it into DEST_DIR).
TARBALL_MEMBER = "static/react"
INSTALL_VAR = "prometheus_web_ui_archive_src"  # the prometheus role's variable
NICE = ["nice", "-n", "10"]  # beside a running lab on a shared machine
STATUS_FILE = "prometheus-ui-status"  # in the lab's state directory, read by `lab status`

Run = Callable[[Sequence[str], Path, Mapping[str, str], float], subprocess.CompletedProcess[str]]


class UiError(RuntimeError):
    """The web UI cannot be had; the message says why and what to do."""


@dataclass(frozen=True)
class Step:
    """One command of the build, run in the unpacked ``web/ui``."""

    name: str
    argv: tuple[str, ...]
    timeout_s: float


# What PROVENANCE.md verified, in order; GENERATE_SOURCEMAP=false is set in the environment (_env).
STEPS = (
    Step("npm ci", (*NICE, "npm", "ci", "--no-audit", "--no-fund"), NPM_TIMEOUT_S),
    Step("build_ui.sh --all", (*NICE, "bash", "build_ui.sh", "--all"), BUILD_TIMEOUT_S),
)


@dataclass(frozen=True)
class UiBuild:
    """A usable web-UI tarball and how it was made (``lab status`` prints ``how``)."""

    tarball: Path  # members static/react/…, as a release's prometheus-web-ui-<version>.tar.gz
    how: str
    seconds: dict[str, float]  # wall time of each step; empty when the cached build was used
    cached: bool = False


def cache_dir(root: Path | None = None) -> Path:
    return (
        (state_root() if root is None else root)
        / "cache"
        / f"prometheus-web-ui-{versions.PROMETHEUS_UI_VERSION}"
    )


def entry_dir(expected_sha256: str, root: Path | None = None) -> Path:
    """The cache entry of one source archive: the version's directory, then the archive's sha256."""
    return cache_dir(root) / f"archive-{expected_sha256[:12]}"


_ARCHIVE = archives.PinnedArchive(
    "the source archive of Prometheus' web UI (the tag's web/ui)",
    versions.PROMETHEUS_UI_ARCHIVE,
    f"`git archive --format=tar.gz --prefix={versions.PROMETHEUS_UI_ARCHIVE_PREFIX}/ "
    f"{versions.PROMETHEUS_UI_VERSION} web/ui`",
    f"--prometheus-ui-source PATH or ${SOURCE_ENV}",
)


def verify_archive(archive: Path, expected_sha256: str) -> None:
    """Raise :class:`UiError` unless ``archive`` is a readable file with the pinned sha256."""
    archives.verify(archive, expected_sha256, _ARCHIVE, UiError)


def cached(
    expected_sha256: str = versions.PROMETHEUS_UI_ARCHIVE_SHA256, root: Path | None = None
) -> UiBuild | None:
    entry = entry_dir(expected_sha256, root)
    record, tarball = entry / "build.json", entry / versions.PROMETHEUS_UI_ARCHIVE
    if not (record.is_file() and tarball.is_file()):
        return None
    data = json.loads(record.read_text(encoding="utf-8"))
    return UiBuild(tarball, str(data["how"]), {}, cached=True)


def ensure(
    progress: Progress,
    source: Path | None = None,
    *,
    expected_sha256: str = versions.PROMETHEUS_UI_ARCHIVE_SHA256,
    prefix: str = versions.PROMETHEUS_UI_ARCHIVE_PREFIX,
    steps: Sequence[Step] = STEPS,
    run: Run | None = None,
    root: Path | None = None,
) -> UiBuild:
    """The cached build, else a new one; :class:`UiError` when it cannot be made.

    ``steps`` and ``run`` are what the build executes (the tests pass a stub); ``root`` is the state root.
    """
    if (hit := cached(expected_sha256, root)) is not None:
        return hit
    archive = source or (Path(os.environ[SOURCE_ENV]) if os.environ.get(SOURCE_ENV) else DEFAULT_ARCHIVE)
    verify_archive(archive, expected_sha256)
    if run is None:
        _require_npm()
        run = _run
    parent = cache_dir(root)

    def waiting(holder: str) -> None:
        progress.say(f"Prometheus web UI: waiting for {holder}, which is building it")

    with lock.building(parent, "web-ui", waiting):
        if (hit := cached(expected_sha256, root)) is not None:  # the build waited for
            return hit
        return _build(progress, archive, expected_sha256, prefix, steps, run, root)


def _build(
    progress: Progress,
    archive: Path,
    expected_sha256: str,
    prefix: str,
    steps: Sequence[Step],
    run: Run,
    root: Path | None,
) -> UiBuild:
    parent = cache_dir(root)
    # Built beside its entry and renamed into place: a reader sees a whole entry or none.
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=parent))
    try:
        with tempfile.TemporaryDirectory(prefix="prometheus-web-ui-src-") as work:
            tree = _unpack(archive, Path(work), prefix)
            seconds = {step.name: _run_step(step, tree, run, progress) for step in steps}
            react = tree / TARBALL_MEMBER
            if not (react / "index.html").is_file():
                raise UiError(f"the build of {archive} made no {TARBALL_MEMBER}/index.html in web/ui.")
            _pack(react, staging / versions.PROMETHEUS_UI_ARCHIVE)
        how = (
            f"built from {archive} (sha256 {expected_sha256[:12]}…, tag {versions.PROMETHEUS_UI_VERSION}) "
            f"by {' then '.join(step.name for step in steps)}"
        )
        record = {"how": how, "seconds": seconds, "source": str(archive), "sha256": expected_sha256}
        (staging / "build.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        entry = entry_dir(expected_sha256, root)
        try:
            staging.rename(entry)
        except OSError:
            if cached(expected_sha256, root) is None:  # not a concurrent build that won the rename
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return UiBuild(entry / versions.PROMETHEUS_UI_ARCHIVE, how, seconds)


def prepare(progress: Progress, source: Path | None, status: Path) -> UiBuild | None:
    """For ``lab up``: the build, or ``None`` with one line saying why (the lab comes up without it).
    ``status`` gets the line ``lab status`` prints."""
    try:
        built = ensure(progress, source)
    except (UiError, OSError) as error:
        line = f"not built, Debian's page without the React UI instead: {error}"
        progress.say(f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION}: {line}")
        status.write_text(line.replace("\n", " ") + "\n", encoding="utf-8")
        return None
    if built.cached:
        progress.say(f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION}: cached ({built.tarball})")
    else:
        took = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in built.seconds.items())
        progress.say(f"Prometheus web UI {versions.PROMETHEUS_UI_VERSION}: built ({took}) → {built.tarball}")
    status.write_text(f"{built.how} → {built.tarball}\n", encoding="utf-8")
    return built


def install_vars(built: UiBuild | None) -> dict[str, str]:
    """The prometheus role's variable for a build; none without one (the role then leaves the UI alone)."""
    return {INSTALL_VAR: str(built.tarball)} if built is not None else {}


def _require_npm() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        raise UiError(
            f"{' and '.join(missing)} not on PATH: building Prometheus' web UI needs Node ≥ 20 and npm "
            "(the tag's web/ui/.nvmrc says v20.5.1). Fix: install them (Debian: apt-get install nodejs npm)."
        )


def _unpack(archive: Path, work: Path, prefix: str) -> Path:
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(work, filter="data")  # no absolute paths, links out of the tree or devices
    tree = work / prefix / "web" / "ui"
    if not (tree / "package.json").is_file():
        raise UiError(f"{archive}: no {prefix}/web/ui/package.json inside.")
    return tree


def _run_step(step: Step, tree: Path, run: Run, progress: Progress) -> float:
    began = time.monotonic()
    with progress.step(f"Prometheus web UI: {' '.join(step.argv)}"):
        result = run(step.argv, tree, _env(), step.timeout_s)
    if result.returncode != 0:
        tail = " ".join((result.stderr or result.stdout or "").strip().splitlines()[-5:]) or "(no output)"
        raise UiError(
            f"`{step.name}` in web/ui failed (exit {result.returncode}): {tail}\nFix: npm must reach its "
            "registry (or its proxy, npm_config_registry) and Node must be ≥ 20."
        )
    return round(time.monotonic() - began, 1)


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    # No source maps: the release tarball has none either. CI unset: react-scripts would make the
    # tag's lint warnings fatal, and the tag's own release build is what is wanted here.
    return {**env, "GENERATE_SOURCEMAP": "false"}


def _run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    return build_step.run(argv, cwd, env, timeout_s, UiError)


def _pack(react: Path, tarball: Path) -> None:
    """``react`` as ``static/react/…`` members, root-owned, 0644 files and 0755 directories."""

    def normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(react, arcname=TARBALL_MEMBER, filter=normal)
