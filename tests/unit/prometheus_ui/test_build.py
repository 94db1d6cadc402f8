"""Prometheus' web UI build: the archive check (missing, wrong sha256, unreadable), the cache entry's key
(version, then the archive's sha256), a second call that builds nothing, and no cache entry from a build
that failed. A tiny archive and a stand-in build step replace npm (the steps are a parameter)."""

import hashlib
import io
import json
import subprocess
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from lab import versions
from lab.progress import Progress
from lab.prometheus_ui import build

PREFIX = "prometheus-web-ui-test"
# What build_ui.sh --all leaves behind, in miniature: web/ui/static/react/{index.html,static/js/…}.
STUB = build.Step(
    "stub build",
    (
        "sh",
        "-c",
        "mkdir -p static/react/static/js && echo '<title>Prometheus</title>' > static/react/index.html"
        " && echo '//' > static/react/static/js/main.js",
    ),
    30,
)


def _archive(path: Path) -> str:
    with tarfile.open(path, "w:gz") as tar:
        body = b'{"name": "prometheus-io", "private": true}\n'
        info = tarfile.TarInfo(f"{PREFIX}/web/ui/package.json")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Recorder:
    """The build's ``run``: runs each step for real, in the unpacked tree, and records its argv."""

    def __init__(self) -> None:
        self.argvs: list[tuple[str, ...]] = []

    def __call__(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float
    ) -> subprocess.CompletedProcess[str]:
        assert env["GENERATE_SOURCEMAP"] == "false" and "CI" not in env
        assert (cwd / "package.json").is_file()  # web/ui of the unpacked archive
        self.argvs.append(tuple(argv))
        return subprocess.run(list(argv), cwd=cwd, env=dict(env), capture_output=True, text=True, check=False)


def _ensure(
    archive: Path,
    sha256: str,
    root: Path,
    steps: Sequence[build.Step] = (STUB,),
    run: Recorder | None = None,
) -> build.UiBuild:
    return build.ensure(
        Progress(quiet=True),
        archive,
        expected_sha256=sha256,
        prefix=PREFIX,
        steps=steps,
        run=run or Recorder(),
        root=root,
    )


def test_an_archive_with_the_pinned_hash_passes(tmp_path: Path) -> None:
    archive = tmp_path / "ui.tar.gz"
    build.verify_archive(archive, _archive(archive))


def test_a_missing_archive_names_the_path_the_hash_and_the_fix(tmp_path: Path) -> None:
    absent = tmp_path / "absent.tar.gz"
    with pytest.raises(build.UiError) as raised:
        build.verify_archive(absent, versions.PROMETHEUS_UI_ARCHIVE_SHA256)
    message = str(raised.value)
    assert str(absent) in message and versions.PROMETHEUS_UI_ARCHIVE_SHA256 in message
    assert "--prometheus-ui-source PATH" in message and build.SOURCE_ENV in message


def test_a_wrong_hash_names_both_hashes_and_the_fix(tmp_path: Path) -> None:
    archive = tmp_path / "ui.tar.gz"
    actual = _archive(archive)
    with pytest.raises(build.UiError) as raised:
        build.verify_archive(archive, "0" * 64)
    message = str(raised.value)
    assert str(archive) in message and actual in message and "0" * 64 in message
    assert "git archive" in message and "web/ui" in message


def test_an_unreadable_archive_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(build.UiError, match="cannot read"):
        build.verify_archive(tmp_path, "0" * 64)  # a directory: open() fails even for root


def test_the_build_is_cached_by_version_and_archive_hash_and_a_second_call_builds_nothing(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "ui.tar.gz"
    sha256 = _archive(archive)
    root = tmp_path / "state"
    runs = Recorder()
    first = _ensure(archive, sha256, root, run=runs)
    entry = root / "cache" / f"prometheus-web-ui-{versions.PROMETHEUS_UI_VERSION}" / f"archive-{sha256[:12]}"
    assert first.tarball == entry / versions.PROMETHEUS_UI_ARCHIVE and not first.cached
    assert set(first.seconds) == {"stub build"}
    with tarfile.open(first.tarball) as tar:  # the layout Debian's install-ui.sh extracts
        members = {member.name: member for member in tar.getmembers()}
    assert set(members) == {
        "static/react",
        "static/react/index.html",
        "static/react/static",
        "static/react/static/js",
        "static/react/static/js/main.js",
    }
    assert {(m.uid, m.gid, m.mode) for m in members.values() if m.isfile()} == {(0, 0, 0o644)}
    assert json.loads((entry / "build.json").read_text())["sha256"] == sha256

    archive.unlink()  # a cached build needs no source any more
    again = _ensure(archive, sha256, root, run=runs)
    assert again.cached and again.tarball == first.tarball and again.seconds == {}
    assert runs.argvs == [STUB.argv]  # the stub ran once
    assert build.cached(sha256, root) == again


def test_another_archive_hash_is_another_entry(tmp_path: Path) -> None:
    archive = tmp_path / "ui.tar.gz"
    sha256 = _archive(archive)
    _ensure(archive, sha256, tmp_path / "state")
    assert build.cached("f" * 64, tmp_path / "state") is None


def test_a_failed_build_leaves_no_cache_entry(tmp_path: Path) -> None:
    archive = tmp_path / "ui.tar.gz"
    sha256 = _archive(archive)
    root = tmp_path / "state"
    half = build.Step(
        "half build", ("sh", "-c", "mkdir -p static/react && echo npm ERR! 403 >&2; exit 1"), 30
    )
    with pytest.raises(build.UiError, match=r"`half build` in web/ui failed \(exit 1\): npm ERR! 403"):
        _ensure(archive, sha256, root, steps=(half,))
    # Neither an entry nor a staging directory: the build lock's file alone (lab.bringup.lock.building).
    assert [p.name for p in build.cache_dir(root).iterdir()] == [".build.lock"]
    assert build.cached(sha256, root) is None


def test_a_build_without_index_html_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "ui.tar.gz"
    sha256 = _archive(archive)
    empty = build.Step("no output", ("true",), 30)
    with pytest.raises(build.UiError, match=r"made no static/react/index\.html"):
        _ensure(archive, sha256, tmp_path / "state", steps=(empty,))
    assert build.cached(sha256, tmp_path / "state") is None


def test_prepare_turns_a_failure_into_a_status_line_and_no_build(
    tmp_path: Path, isolated_state: Path
) -> None:
    status = tmp_path / build.STATUS_FILE
    built = build.prepare(Progress(quiet=True), tmp_path / "absent.tar.gz", status)
    assert built is None
    line = status.read_text()
    assert line.startswith("not built, Debian's page") and "absent.tar.gz" in line
    assert build.install_vars(None) == {}


def test_the_install_variable_names_the_tarball(tmp_path: Path) -> None:
    built = build.UiBuild(tmp_path / "ui.tar.gz", "built", {})
    assert build.install_vars(built) == {"prometheus_web_ui_archive_src": str(tmp_path / "ui.tar.gz")}


def test_the_steps_are_the_verified_build_at_low_priority() -> None:
    assert [step.argv for step in build.STEPS] == [
        ("nice", "-n", "10", "npm", "ci", "--no-audit", "--no-fund"),
        ("nice", "-n", "10", "bash", "build_ui.sh", "--all"),
    ]
