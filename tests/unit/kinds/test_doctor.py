from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab import versions
from lab.kinds import doctor
from lab.kinds.doctor import Finding
from lab.prometheus_ui import build as prometheus_ui
from lab.slurm_exporter.binary import SOURCE_ENV


def which_of(found: dict[str, str]) -> Callable[[str], str | None]:
    return found.get


def go_run(output: str) -> Callable[..., Any]:
    def run(argv: list[str], **_: Any) -> SimpleNamespace:
        assert argv[1:] == ["version"]
        return SimpleNamespace(returncode=0, stdout=output, stderr="")

    return run


@pytest.mark.parametrize(
    ("check", "package"),
    [
        (doctor.check_debootstrap, "apt-get install debootstrap"),
        (doctor.check_ansible, "pip install -e '.[dev]'"),
        (doctor.check_just, "pip install -e '.[dev]'"),
        (doctor.check_cc, "apt-get install gcc"),
        (doctor.check_chromium, "apt-get install chromium"),
    ],
)
def test_a_missing_tool_is_reported_with_a_fix_naming_its_package(
    check: Callable[..., Finding], package: str
) -> None:
    finding = check(which=which_of({}))
    assert not finding.ok
    assert "not on PATH" in finding.detail
    assert package in finding.fix


@pytest.mark.parametrize(
    ("check", "tool", "need"),
    [
        (doctor.check_debootstrap, "debootstrap", "lab"),
        (doctor.check_ansible, "ansible-playbook", "lab"),
        (doctor.check_just, "just", "lab"),
        (doctor.check_cc, "gcc", "tests"),
        (doctor.check_chromium, "chromium", "tests"),
        (doctor.check_ssh, "ssh", "tests"),
    ],
)
def test_a_present_tool_passes_with_its_path(check: Callable[..., Finding], tool: str, need: str) -> None:
    finding = check(which=which_of({tool: f"/usr/bin/{tool}"}))
    assert finding == Finding(tool, True, f"/usr/bin/{tool}", need=need)  # type: ignore[arg-type]


def test_an_old_go_is_reported_as_too_old(tmp_path: Path) -> None:
    finding = doctor.check_go(
        which=which_of({"go": "/usr/bin/go"}),
        run=go_run("go version go1.22.1 linux/amd64\n"),
        fallback=tmp_path / "no",
    )
    assert not finding.ok
    assert "go1.22.1" in finding.detail and "too old" in finding.detail
    assert "--no-exporter" in finding.fix


def test_a_recent_go_passes_and_the_fallback_path_is_found(tmp_path: Path) -> None:
    fallback = tmp_path / "go"
    fallback.write_text("")
    finding = doctor.check_go(
        which=which_of({}), run=go_run("go version go1.26.8 linux/amd64\n"), fallback=fallback
    )
    assert finding == Finding("go", True, f"go1.26.8 ({fallback})")


def test_no_go_at_all_names_no_exporter(tmp_path: Path) -> None:
    finding = doctor.check_go(which=which_of({}), run=go_run(""), fallback=tmp_path / "absent")
    assert not finding.ok
    assert "--no-exporter" in finding.fix


def test_an_unreachable_daemon_says_lab_up_installs_docker_io() -> None:
    def from_env(**_: Any) -> Any:
        raise ConnectionError("Error while fetching server API version: connection refused")

    finding = doctor.check_docker(from_env=from_env, which=which_of({"docker": "/usr/bin/docker"}))
    assert not finding.ok
    assert "connection refused" in finding.detail
    assert "docker.io" in finding.fix and "dockerd" in finding.fix


def test_a_reachable_daemon_passes() -> None:
    pings: list[float] = []

    def from_env(timeout: float) -> Any:
        def ping() -> bool:
            pings.append(timeout)
            return True

        return SimpleNamespace(ping=ping)

    finding = doctor.check_docker(from_env=from_env, which=which_of({"docker": "/usr/bin/docker"}))
    assert finding.ok
    assert pings == [doctor.DOCKER_PING_TIMEOUT_S]


def test_old_python_is_reported() -> None:
    assert not doctor.check_python((3, 10, 4)).ok
    assert doctor.check_python((3, 12, 1)).ok


def test_exporter_source_prefers_the_cache_then_the_environment_then_the_archive(tmp_path: Path) -> None:
    cache, archive = tmp_path / "cache", tmp_path / "vendor" / "slurm_exporter-1.8.4.tar.gz"
    missing = doctor.check_exporter_source(cache, archive, {})
    assert not missing.ok and "--no-exporter" in missing.fix

    assert not doctor.check_exporter_source(cache, archive, {SOURCE_ENV: str(tmp_path / "nope")}).ok
    archive.parent.mkdir()
    archive.write_text("")
    assert doctor.check_exporter_source(cache, archive, {}).ok

    (cache / "module").mkdir(parents=True)
    (cache / "module" / "slurm_exporter").write_text("")
    assert "cached binary" in doctor.check_exporter_source(cache, archive, {}).detail


def test_disk_below_the_threshold_is_missing_and_nothing_is_created(tmp_path: Path) -> None:
    root = tmp_path / "state" / "deeper"
    low = doctor.check_disk(root, need_gb=4, disk_usage=lambda _: SimpleNamespace(free=1e9))
    assert not low.ok and "1.0 GB free" in low.detail
    assert doctor.check_disk(root, need_gb=4, disk_usage=lambda _: SimpleNamespace(free=50e9)).ok
    assert not root.exists()


def test_cgroup_is_informational(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    assert doctor.check_cgroup(tmp_path) == Finding("cgroup", True, f"v2 (unified, {tmp_path})")
    assert doctor.check_cgroup(tmp_path / "absent").ok


def test_render_prints_one_aligned_line_per_check_with_the_fix_of_what_is_missing() -> None:
    text = doctor.render(
        [
            Finding("go", True, "go1.26.8 (/usr/local/go/bin/go)"),
            Finding("debootstrap", False, "not on PATH", "apt-get install debootstrap"),
        ]
    )
    assert text.splitlines() == [
        "ok      go           go1.26.8 (/usr/local/go/bin/go)",
        "MISSING debootstrap  not on PATH  fix: apt-get install debootstrap",
        "The lab cannot come up here until each MISSING line is fixed.",
    ]


def test_what_only_the_tests_or_an_option_need_is_reported_and_does_not_fail() -> None:
    chromium = doctor.check_chromium(which=which_of({}))
    npm = doctor.check_web_ui_build(which=which_of({}), root=Path("/nonexistent"))
    gcc, ssh = doctor.check_cc(which=which_of({})), doctor.check_ssh(which=which_of({}))
    found = [Finding("go", True, "go1.26.8"), chromium, npm, gcc, ssh]
    assert [f.need for f in found[1:]] == ["tests", "optional", "tests", "tests"]
    assert doctor.lab_can_run(found)
    lines = doctor.render(found).splitlines()
    assert lines[1].startswith("missing chromium") and lines[1].endswith("(only the tests need it)")
    assert lines[2].startswith("missing npm") and lines[2].endswith("(the lab comes up without it)")
    assert lines[-1] == "The lab can come up; the lines marked missing are for the tests or an option."


def test_a_missing_lab_need_fails_whatever_else_is_there() -> None:
    found = [
        doctor.check_chromium(which=which_of({"chromium": "/usr/bin/chromium"})),
        doctor.check_debootstrap(which_of({})),
    ]
    assert not doctor.lab_can_run(found)


def test_run_all_covers_every_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "check_docker", lambda: Finding("docker", False, "faked", "start dockerd"))
    names = [finding.name for finding in doctor.run_all()]
    assert names == [
        "python",
        "docker",
        "debootstrap",
        "go",
        "gcc",
        "exporter",
        "npm",
        "chromium",
        "ssh",
        "ansible-playbook",
        "just",
        "disk",
        "cgroup",
    ]


def test_no_npm_and_no_cached_web_ui_says_prometheus_would_serve_debians_page(tmp_path: Path) -> None:
    finding = doctor.check_web_ui_build(which=which_of({"node": "/usr/bin/node"}), root=tmp_path)
    assert not finding.ok and finding.name == "npm"
    assert "npm not on PATH" in finding.detail and "Debian's page" in finding.detail
    assert "apt-get install nodejs npm" in finding.fix


def test_npm_builds_the_web_ui_when_nothing_is_cached(tmp_path: Path) -> None:
    finding = doctor.check_web_ui_build(
        which=which_of({"node": "/usr/bin/node", "npm": "/usr/bin/npm"}), root=tmp_path
    )
    assert finding.ok and finding.detail.startswith("/usr/bin/npm")


def test_a_cached_web_ui_needs_no_npm(tmp_path: Path) -> None:
    entry = prometheus_ui.entry_dir(versions.PROMETHEUS_UI_ARCHIVE_SHA256, tmp_path)
    entry.mkdir(parents=True)
    (entry / versions.PROMETHEUS_UI_ARCHIVE).write_bytes(b"")
    (entry / "build.json").write_text('{"how": "built"}')
    finding = doctor.check_web_ui_build(which=which_of({}), root=tmp_path)
    assert finding.ok and str(entry) in finding.detail
