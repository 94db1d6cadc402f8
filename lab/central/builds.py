"""The site's centre beyond the fence, its binaries: built once per version set on the host, cached.

- VictoriaMetrics single-node and vmalert: ``go install`` of ``app/victoria-metrics`` and ``app/vmalert``
  of ``github.com/VictoriaMetrics/VictoriaMetrics`` at its pin;
- VictoriaLogs: ``go install`` of ``app/victoria-logs`` of ``github.com/VictoriaMetrics/VictoriaLogs``;
- the egress gateway: ``go install`` of the OpenTelemetry Collector's builder at the core release, then
  ``builder --config manifest.yaml`` with the manifest of ``collector_manifest`` written into the cache
  entry's work directory; the builder runs ``go mod tidy`` and ``go build -trimpath -ldflags=-s -w`` there.
  ``--skip-strict-versioning=false`` makes it check that every component resolved to its pinned release,
  and the generated ``go.mod`` is checked again for the exact versions (``collector_manifest.drift``).

Every build: ``CGO_ENABLED=0`` (static), ``-trimpath`` and ``-s -w`` (no local paths, no symbols),
``GOTOOLCHAIN=local`` (no other toolchain is fetched), under ``nice -n 10`` (a running lab shares the
machine). The Victoria binaries' ``-version`` says their release: ``lib/buildinfo.Version`` is set to
``<binary>-<version>`` (their own Makefile sets it to the name, the build's date and its git description).
The caller's Go module and build caches (``GOMODCACHE``, ``GOCACHE``) are shared, so a dependency is
downloaded once.

The cache: ``<state root>/cache/central/<binary>-<version>-<key>/``, one entry per build, whole or not
at all (built in a dot directory beside it, then renamed); the key is the sha256 of what decides the
binary: module, version and flags, and for the gateway the builder's version and the manifest's bytes.
A cached build is never redone; a changed pin or manifest makes a new entry for that build only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab import build_step, versions
from lab.bringup import lock
from lab.central import collector_manifest
from lab.paths import state_root
from lab.progress import Progress

GO_FALLBACK = Path("/usr/local/go/bin/go")  # where Go's own tarball installs it, often not on PATH
NICE = ("nice", "-n", "10")  # beside a running lab on a shared machine
# From empty Go caches on 2 busy cores: the gateway 713.7 s, a store 14.6-80.4 s (BENCHMARKS.md); margin.
BUILD_TIMEOUT_S = 3600
GO_LDFLAGS = "-s -w"
BUILDINFO = "github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version"
MANIFEST = "manifest.yaml"
RECORD = "build.json"

Run = Callable[[Sequence[str], Path, Mapping[str, str], float], subprocess.CompletedProcess[str]]


class BuildError(RuntimeError):
    """A binary cannot be had; the message names the module, the command and what to do."""


@dataclass(frozen=True)
class GoInstall:
    """One ``go install <package>@<version>``; the binary is named after the package's last element."""

    package: str
    module: str
    version: str
    go_at_least: str  # the module's go.mod at that version
    version_flag: bool  # set lib/buildinfo.Version (the Victoria binaries)

    @property
    def binary(self) -> str:
        return self.package.rsplit("/", 1)[-1]

    def ldflags(self) -> str:
        if not self.version_flag:
            return GO_LDFLAGS
        return f"{GO_LDFLAGS} -X {BUILDINFO}={self.binary}-{self.version}"

    def args(self) -> list[str]:
        return ["install", "-trimpath", "-ldflags", self.ldflags(), f"{self.package}@{self.version}"]


def stores() -> tuple[GoInstall, ...]:
    """The central stores and vmalert, from the pins (read at each call)."""
    vm, vl = versions.VICTORIA_METRICS_MODULE, versions.VICTORIA_LOGS_MODULE
    return (
        GoInstall(f"{vm}/app/victoria-metrics", vm, versions.VICTORIA_METRICS_VERSION, "1.26.6", True),
        GoInstall(f"{vm}/app/vmalert", vm, versions.VICTORIA_METRICS_VERSION, "1.26.6", True),
        GoInstall(f"{vl}/app/victoria-logs", vl, versions.VICTORIA_LOGS_VERSION, "1.26.5", True),
    )


def builder() -> GoInstall:
    module = versions.OTELCOL_BUILDER_MODULE
    return GoInstall(module, module, versions.OTELCOL_CORE_VERSION, "1.26.0", False)


def builder_args(manifest: str = MANIFEST) -> list[str]:
    """The builder's flags: the manifest, and the check that each component resolved to its release."""
    return ["--config", manifest, "--skip-strict-versioning=false"]


@dataclass(frozen=True)
class CentralBinaries:
    victoria_metrics: Path
    vmalert: Path
    victoria_logs: Path
    otelcol: Path  # the egress gateway, otelcol-lab
    manifest: Path  # the builder's manifest it was made from, in its cache entry's work directory
    seconds: dict[str, float]  # each binary built by this call: its wall time; cached ones are absent

    @property
    def cached(self) -> bool:
        return not self.seconds

    def binaries(self) -> dict[str, Path]:
        return {
            "victoria-metrics": self.victoria_metrics,
            "vmalert": self.vmalert,
            "victoria-logs": self.victoria_logs,
            collector_manifest.DIST_NAME: self.otelcol,
        }


def cache_dir(root: Path | None = None) -> Path:
    return (state_root() if root is None else root) / "cache" / "central"


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def install_entry(build: GoInstall, root: Path | None = None) -> Path:
    key = _key(build.package, build.version, *build.args())
    return cache_dir(root) / f"{build.binary}-{build.version}-{key}"


def collector_entry(root: Path | None = None) -> Path:
    tool = builder()
    key = _key(tool.package, tool.version, *builder_args(), collector_manifest.render())
    return cache_dir(root) / f"{collector_manifest.DIST_NAME}-{versions.OTELCOL_CONTRIB_VERSION}-{key}"


def ensure(
    progress: Progress,
    *,
    run: Run | None = None,
    go: str | None = None,
    root: Path | None = None,
) -> CentralBinaries:
    """Every binary, from its cache entry or built now (the module docstring); :class:`BuildError`
    otherwise. ``run`` executes a command (the tests pass a stub), ``go`` is the toolchain (else found),
    ``root`` the state root."""

    def waiting(holder: str) -> None:
        progress.say(f"the fence's binaries: waiting for {holder}, which is building them")

    builds = _Builds(progress, run or _run, go, root)
    with lock.building(cache_dir(root), "egress install", waiting):  # after the wait, every entry a hit
        victoria_metrics, vmalert, victoria_logs = (builds.install(b) for b in stores())
        otelcol = builds.collector()
    return CentralBinaries(
        victoria_metrics,
        vmalert,
        victoria_logs,
        otelcol,
        collector_entry(root) / "work" / MANIFEST,
        builds.seconds,
    )


def cached(root: Path | None = None) -> CentralBinaries | None:
    """Every binary from its cache entry, building nothing; None when one is not built yet."""
    hits = [_hit(install_entry(b, root), b.binary) for b in stores()]
    otelcol = _hit(collector_entry(root), collector_manifest.DIST_NAME)
    victoria_metrics, vmalert, victoria_logs = hits
    if victoria_metrics is None or vmalert is None or victoria_logs is None or otelcol is None:
        return None
    manifest = collector_entry(root) / "work" / MANIFEST
    return CentralBinaries(victoria_metrics, vmalert, victoria_logs, otelcol, manifest, {})


def go_path() -> str | None:
    return shutil.which("go") or (str(GO_FALLBACK) if GO_FALLBACK.is_file() else None)


class _Builds:
    def __init__(self, progress: Progress, run: Run, go: str | None, root: Path | None) -> None:
        self.progress, self.run, self._go, self.root = progress, run, go, root
        self.seconds: dict[str, float] = {}

    def go(self) -> str:
        """The toolchain, looked for only when something is to be built."""
        if self._go is None:
            self._go = go_path()
            if self._go is None:
                raise BuildError(
                    f"no Go toolchain: neither `go` on PATH nor {GO_FALLBACK}. Fix: install Go ≥ 1.26.6 "
                    f"(VictoriaMetrics {versions.VICTORIA_METRICS_VERSION}'s go.mod says go 1.26.6)."
                )
        return self._go

    def env(self, **extra: str) -> dict[str, str]:
        # The builder runs `go` from PATH: the toolchain's own directory first. GOFLAGS cleared: the
        # caller's -mod may not apply.
        path = f"{Path(self.go()).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return {
            **os.environ,
            "CGO_ENABLED": "0",
            "GOTOOLCHAIN": "local",
            "GOFLAGS": "",
            "PATH": path,
            **extra,
        }

    def install(self, build: GoInstall) -> Path:
        entry = install_entry(build, self.root)
        if (hit := _hit(entry, build.binary)) is not None:
            self.progress.say(f"{build.binary} {build.version}: cached ({hit})")
            return hit
        staging = self._staging()
        try:
            argv = [*NICE, self.go(), *build.args()]
            fix = (
                f"the Go module proxy must serve {build.module}@{build.version} and its dependencies "
                f"(GOPROXY), and Go must be ≥ {build.go_at_least} (its go.mod)."
            )
            what = f"go install {build.package}@{build.version}"
            seconds = self._step(what, argv, staging, self.env(GOBIN=str(staging)), fix)
            self._expect(staging / build.binary, what)
            return self._store(staging, entry, build.binary, argv, seconds)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def collector(self) -> Path:
        name = collector_manifest.DIST_NAME
        entry = collector_entry(self.root)
        if (hit := _hit(entry, name)) is not None:
            self.progress.say(f"{name} (contrib {versions.OTELCOL_CONTRIB_VERSION}): cached ({hit})")
            return hit
        tool = self.install(builder())
        staging = self._staging()
        try:
            work = staging / "work"
            work.mkdir()
            manifest = work / MANIFEST
            manifest.write_text(collector_manifest.render(), encoding="utf-8")
            argv = [*NICE, str(tool), *builder_args()]
            what = (
                f"{name}: builder {versions.OTELCOL_CORE_VERSION} --config {MANIFEST} "
                f"(core {versions.OTELCOL_CORE_VERSION}, contrib {versions.OTELCOL_CONTRIB_VERSION})"
            )
            fix = (
                f"the Go module proxy must serve every module {entry.name}/work/{MANIFEST} lists, at its "
                f"version, and their dependencies (GOPROXY); keep every collector module at one release "
                f"(lab/versions.py: core {versions.OTELCOL_CORE_VERSION}, contrib "
                f"{versions.OTELCOL_CONTRIB_VERSION}); Go ≥ {builder().go_at_least}."
            )
            seconds = self._step(what, argv, work, self.env(), fix)
            generated = work / collector_manifest.OUTPUT_PATH
            self._expect(generated / name, what)
            go_mod = generated / "go.mod"
            moved = collector_manifest.drift(go_mod.read_text(encoding="utf-8")) if go_mod.is_file() else []
            if not go_mod.is_file() or moved:
                raise BuildError(
                    f"{what}: the generated go.mod does not hold every component at its pin "
                    f"({'; '.join(moved) or 'no go.mod'}).\nFix: pin the versions `go mod tidy` chose in "
                    "lab/versions.py, each collector module at one release."
                )
            shutil.move(str(generated / name), staging / name)
            return self._store(staging, entry, name, argv, seconds)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _staging(self) -> Path:
        parent = cache_dir(self.root)
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=".building-", dir=parent))

    def _step(self, what: str, argv: list[str], cwd: Path, env: dict[str, str], fix: str) -> float:
        began = time.monotonic()
        with self.progress.step(what):
            result = self.run(argv, cwd, env, BUILD_TIMEOUT_S)
        if result.returncode != 0:
            tail = " ".join((result.stderr or result.stdout or "").strip().splitlines()[-6:]) or "(no output)"
            raise BuildError(
                f"{what} failed (exit {result.returncode}): `{' '.join(argv)}` in {cwd}: {tail}\nFix: {fix}"
            )
        return round(time.monotonic() - began, 1)

    @staticmethod
    def _expect(binary: Path, what: str) -> None:
        if not binary.is_file():
            raise BuildError(f"{what} exited 0 but made no {binary}.\nFix: report it; nothing was cached.")

    def _store(self, staging: Path, entry: Path, binary: str, argv: list[str], seconds: float) -> Path:
        size = (staging / binary).stat().st_size
        record = {"argv": argv[len(NICE) + 1 :], "seconds": seconds, "bytes": size}
        (staging / RECORD).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        try:
            staging.rename(entry)  # whole or not at all: a half build is never cached
        except OSError:
            if _hit(entry, binary) is None:  # not a concurrent build that won the rename
                raise
        self.seconds[binary] = seconds
        return entry / binary


def _hit(entry: Path, binary: str) -> Path | None:
    return entry / binary if (entry / RECORD).is_file() and (entry / binary).is_file() else None


def _run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    return build_step.run(argv, cwd, env, timeout_s, BuildError)
