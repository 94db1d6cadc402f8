"""The site's centre, its builds: a stub runner stands in for Go and the builder (no unit test runs
Go). Each build's argv, working directory and environment; the manifest written into the gateway's
cache entry; a second call that builds nothing; a changed pin that rebuilds only what it decides; a
failing build's message and the cache it leaves."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from lab import versions
from lab.central import builds
from lab.central import collector_manifest as manifest
from lab.progress import Progress

GO = "/opt/go/bin/go"
VM = f"{versions.VICTORIA_METRICS_MODULE}/app"
VL = f"{versions.VICTORIA_LOGS_MODULE}/app"
BUILDINFO = "-X github.com/VictoriaMetrics/VictoriaMetrics/lib/buildinfo.Version="


class Stub:
    """The builds' ``run``: records each call and makes what the real command would leave behind."""

    def __init__(self, fail: str | None = None, go_mod: str | None = None) -> None:
        self.calls: list[tuple[list[str], Path, dict[str, str]]] = []
        self.fail = fail  # a substring of the argv that fails
        self.go_mod = go_mod  # the generated go.mod; the pinned one when None

    def __call__(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float
    ) -> subprocess.CompletedProcess[str]:
        argv = list(argv)
        self.calls.append((argv, cwd, dict(env)))
        if self.fail is not None and any(self.fail in word for word in argv):
            return subprocess.CompletedProcess(
                argv, 1, "", "go: downloading x\ngo: module lookup: 410 Gone\n"
            )
        if argv[4] == "install":
            package = argv[-1].split("@")[0]
            (Path(env["GOBIN"]) / package.rsplit("/", 1)[-1]).write_text("binary\n")
        else:  # the builder: reads its manifest, writes the generated module and the binary
            dist = yaml.safe_load((cwd / argv[argv.index("--config") + 1]).read_text())["dist"]
            out = cwd / dist["output_path"]
            out.mkdir()
            (out / dist["name"]).write_text("collector\n")
            pinned = "".join(f"require {c.module} {c.version}\n" for c in manifest.components())
            (out / "go.mod").write_text(self.go_mod if self.go_mod is not None else pinned)
        return subprocess.CompletedProcess(argv, 0, "", "")

    def argvs(self) -> list[list[str]]:
        return [argv for argv, _, _ in self.calls]


def _ensure(root: Path, stub: Stub, progress: Progress | None = None) -> builds.CentralBinaries:
    return builds.ensure(progress or Progress(quiet=True), run=stub, go=GO, root=root)


def test_a_cold_cache_builds_each_binary_once_niced_static_and_without_local_paths(tmp_path: Path) -> None:
    stub = Stub()
    built = _ensure(tmp_path, stub)
    installs = [
        (f"{VM}/victoria-metrics", versions.VICTORIA_METRICS_VERSION, "victoria-metrics"),
        (f"{VM}/vmalert", versions.VICTORIA_METRICS_VERSION, "vmalert"),
        (f"{VL}/victoria-logs", versions.VICTORIA_LOGS_VERSION, "victoria-logs"),
    ]
    install = ["nice", "-n", "10", GO, "install", "-trimpath", "-ldflags"]
    expected = [
        [*install, f"-s -w {BUILDINFO}{name}-{version}", f"{package}@{version}"]
        for package, version, name in installs
    ]
    expected.append(
        [*install, "-s -w", f"go.opentelemetry.io/collector/cmd/builder@{versions.OTELCOL_CORE_VERSION}"]
    )
    tool = next(tmp_path.glob(f"cache/central/builder-{versions.OTELCOL_CORE_VERSION}-*/builder"))
    expected.append(
        ["nice", "-n", "10", str(tool), "--config", "manifest.yaml", "--skip-strict-versioning=false"]
    )
    assert stub.argvs() == expected
    for argv, cwd, env in stub.calls:
        assert env["CGO_ENABLED"] == "0" and env["GOTOOLCHAIN"] == "local" and env["GOFLAGS"] == ""
        assert env["PATH"].startswith("/opt/go/bin:")  # the builder finds the same go on PATH
        assert cwd.parent == tmp_path / "cache" / "central" or cwd.name == "work"
        if argv[4] == "install":
            assert env["GOBIN"] == str(cwd)  # the staging directory, renamed into the cache when whole
    assert built.seconds.keys() == {"victoria-metrics", "vmalert", "victoria-logs", "builder", "otelcol-lab"}
    assert not built.cached
    for name, path in built.binaries().items():
        assert path.is_file() and path.name == name
        assert (path.parent / "build.json").is_file()
    assert not list((tmp_path / "cache" / "central").glob(".building-*"))


def test_the_gateway_is_built_from_the_rendered_manifest_in_its_cache_entrys_work_dir(tmp_path: Path) -> None:
    stub = Stub()
    built = _ensure(tmp_path, stub)
    argv, cwd, _ = stub.calls[-1]
    assert argv[4:6] == ["--config", "manifest.yaml"] and cwd.name == "work"
    assert built.manifest == built.otelcol.parent / "work" / "manifest.yaml"
    assert built.manifest.read_text() == manifest.render()
    assert built.otelcol.parent.name.startswith(f"otelcol-lab-{versions.OTELCOL_CONTRIB_VERSION}-")
    assert (built.otelcol.parent / "work" / "otelcol-lab" / "go.mod").is_file()  # kept: what tidy chose


def test_a_cached_build_is_not_redone_and_needs_no_go(tmp_path: Path) -> None:
    first = _ensure(tmp_path, Stub())
    again = Stub()
    hit = builds.ensure(Progress(quiet=True), run=again, go=None, root=tmp_path)
    assert again.calls == []
    assert hit.cached and hit.seconds == {}
    assert hit.binaries() == first.binaries() and hit.manifest == first.manifest


def test_a_cache_hit_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _ensure(tmp_path, Stub())
    capsys.readouterr()
    _ensure(tmp_path, Stub(), Progress())
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all(": cached (" in line for line in lines)


def test_each_build_says_what_it_does_and_how_long_it_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _ensure(tmp_path, Stub(), Progress())
    done = [line for line in capsys.readouterr().err.splitlines() if ": done in " in line]
    assert len(done) == 5
    assert f"go install {VM}/victoria-metrics@{versions.VICTORIA_METRICS_VERSION}: done in " in done[0]
    assert done[-1].split("] ", 1)[1].startswith(f"otelcol-lab: builder {versions.OTELCOL_CORE_VERSION}")
    assert all(line.rstrip().endswith("s") for line in done)


def test_a_changed_contrib_pin_rebuilds_the_gateway_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _ensure(tmp_path, Stub())
    monkeypatch.setattr(versions, "OTELCOL_CONTRIB_VERSION", "v0.165.2")
    stub = Stub()
    second = _ensure(tmp_path, stub)
    (argv,) = stub.argvs()  # the cached builder makes the new manifest's collector; nothing else runs
    assert Path(argv[3]).name == "builder" and argv[4:6] == ["--config", "manifest.yaml"]
    assert second.seconds.keys() == {"otelcol-lab"}
    assert second.otelcol.parent != first.otelcol.parent and first.otelcol.is_file()
    assert "v0.165.2" in second.manifest.read_text()
    assert second.victoria_metrics == first.victoria_metrics


def test_a_failing_build_names_the_module_the_command_and_the_fix_and_caches_nothing_of_it(
    tmp_path: Path,
) -> None:
    stub = Stub(fail="vmalert@")
    with pytest.raises(builds.BuildError) as raised:
        _ensure(tmp_path, stub)
    message = str(raised.value)
    assert f"go install {VM}/vmalert@{versions.VICTORIA_METRICS_VERSION} failed (exit 1)" in message
    assert f"`nice -n 10 {GO} install -trimpath" in message and "410 Gone" in message
    assert f"Fix: the Go module proxy must serve {versions.VICTORIA_METRICS_MODULE}@" in message
    assert "Go must be ≥ 1.26.6" in message
    central = tmp_path / "cache" / "central"
    entries = [p.name.split("-v")[0] for p in central.iterdir() if p.name != ".build.lock"]
    assert entries == ["victoria-metrics"]  # whole builds only
    assert len(stub.calls) == 2  # nothing after the failure


def test_a_failing_gateway_build_names_the_builder_the_manifest_and_the_release(tmp_path: Path) -> None:
    with pytest.raises(builds.BuildError) as raised:
        _ensure(tmp_path, Stub(fail="--skip-strict-versioning=false"))
    message = str(raised.value)
    assert "otelcol-lab: builder" in message and "--config manifest.yaml" in message
    assert "work/manifest.yaml lists" in message
    assert f"core {versions.OTELCOL_CORE_VERSION}, contrib {versions.OTELCOL_CONTRIB_VERSION}" in message
    assert not list((tmp_path / "cache" / "central").glob("otelcol-lab-*"))
    assert not list((tmp_path / "cache" / "central").glob(".building-*"))


def test_a_gateway_whose_go_mod_moved_a_component_is_refused(tmp_path: Path) -> None:
    pinned = [f"require {c.module} {c.version}" for c in manifest.components()]
    moved = [line.replace(versions.OTELCOL_CORE_VERSION, "v0.166.0") for line in pinned]
    with pytest.raises(builds.BuildError, match=r"batchprocessor: v0\.165\.0 → v0\.166\.0"):
        _ensure(tmp_path, Stub(go_mod="\n".join(moved) + "\n"))
    assert not list((tmp_path / "cache" / "central").glob("otelcol-lab-*"))


def test_no_go_toolchain_is_an_error_with_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(builds, "GO_FALLBACK", tmp_path / "no-go")
    stub = Stub()
    with pytest.raises(builds.BuildError, match=r"no Go toolchain.*Fix: install Go ≥ 1\.26\.6"):
        builds.ensure(Progress(quiet=True), run=stub, root=tmp_path)
    assert stub.calls == []


def test_the_cache_key_follows_the_version_and_the_manifest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    vm, gateway = builds.install_entry(builds.stores()[0], tmp_path), builds.collector_entry(tmp_path)
    assert vm.name.startswith(f"victoria-metrics-{versions.VICTORIA_METRICS_VERSION}-")
    monkeypatch.setattr(manifest, "DIST_MODULE", "elsewhere/otelcol-lab")  # the manifest's bytes only
    assert builds.collector_entry(tmp_path) != gateway
    assert builds.install_entry(builds.stores()[0], tmp_path) == vm
    monkeypatch.setattr(versions, "VICTORIA_METRICS_VERSION", "v1.152.0")
    assert builds.install_entry(builds.stores()[0], tmp_path) != vm
