"""The fence off the critical path: cached binaries go in with the bring-up, missing ones start
`lab egress install` in the background (once) with a status line saying so, and `lab egress install`
runs the fence's plays (ansible/fence.yml) with the binaries or leaves the reason in the status line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.central import builds, fence_install
from lab.paths import ANSIBLE_DIR
from lab.progress import Progress

BUILT = builds.CentralBinaries(
    Path("/c/vm"), Path("/c/vmalert"), Path("/c/vl"), Path("/c/otelcol-lab"), Path("/c/manifest.yaml"), {}
)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    (tmp_path / "lab1").mkdir()
    return tmp_path


def test_cached_binaries_go_in_with_the_bring_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builds, "cached", lambda: BUILT)
    assert fence_install.for_bring_up("lab1", Progress(quiet=True)) is BUILT
    assert fence_install.install_vars(BUILT) == {
        "egress_gateway_binary_src": "/c/otelcol-lab",
        "central_store_victoria_metrics_src": "/c/vm",
        "central_store_victoria_logs_src": "/c/vl",
        "central_store_vmalert_src": "/c/vmalert",
    }
    assert fence_install.facts("lab1") == {"fence": "installed with the lab"}


def test_without_them_the_bring_up_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builds, "cached", lambda: None)
    assert fence_install.for_bring_up("lab1", Progress(quiet=True)) is None
    assert fence_install.install_vars(None) == {}


def test_builds_finds_nothing_cached_in_an_empty_state_root(state: Path) -> None:
    assert builds.cached(state) is None


def test_the_background_install_is_lab_egress_install(monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[tuple[str, list[str], str]] = []

    def launch(self: Any, lab: str, args: list[str], meanwhile: str) -> tuple[int, str]:
        launched.append((lab, args, meanwhile))
        return 4242, "being built"

    monkeypatch.setattr(fence_install.detached.BackgroundInstall, "launch", launch)
    assert fence_install.install_later("lab1", Progress(quiet=True)) == 4242
    assert launched == [
        ("lab1", ["egress", "install", "--lab", "lab1"], "nothing crosses until it is installed")
    ]
    assert fence_install.BACKGROUND.retry == "lab egress install"


def _inventory(state: Path) -> None:
    hosts = state / "lab1" / "ansible" / "inventory" / "hosts.yml"
    hosts.parent.mkdir(parents=True)
    hosts.write_text("all: {}\n")


def test_install_runs_the_fence_playbook_with_the_binaries(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _inventory(state)
    ran: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(builds, "ensure", lambda progress: BUILT)
    monkeypatch.setattr(
        fence_install,
        "run_playbook",
        lambda private, hosts, extra, progress, playbook: ran.append((playbook, extra)),
    )
    amended: list[dict[str, Any]] = []
    monkeypatch.setattr(fence_install, "amend_provisioned", lambda private, added: amended.append(added))
    assert fence_install.install("lab1", Progress(quiet=True)) is BUILT
    assert ran == [("fence.yml", fence_install.install_vars(BUILT))]
    assert amended == [fence_install.install_vars(BUILT)]
    assert fence_install.facts("lab1") == {"fence": "installed"}


def test_a_failed_build_leaves_its_reason_for_lab_status(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _inventory(state)

    def fails(progress: Progress) -> builds.CentralBinaries:
        raise builds.BuildError("otelcol-lab: builder failed (exit 1)\nFix: the proxy")

    monkeypatch.setattr(builds, "ensure", fails)
    with pytest.raises(builds.BuildError):
        fence_install.install("lab1", Progress(quiet=True))
    assert fence_install.facts("lab1") == {
        "fence": "not installed: otelcol-lab: builder failed (exit 1) (`lab egress install` tries again)"
    }


def test_install_needs_a_lab_that_was_brought_up() -> None:
    with pytest.raises(FileNotFoundError, match=r"no inventory\. Fix: `lab up` first"):
        fence_install.install("lab1", Progress(quiet=True))


def test_site_yml_runs_the_fence_playbook_whose_roles_wait_for_their_binaries() -> None:
    site = yaml.safe_load((ANSIBLE_DIR / "site.yml").read_text())
    assert {"ansible.builtin.import_playbook": "fence.yml"} in [
        {k: v for k, v in play.items() if k != "name"} for play in site
    ]
    fence = yaml.safe_load((ANSIBLE_DIR / "fence.yml").read_text())
    roles = {play["hosts"]: play["roles"][0] for play in fence}
    assert roles["central"]["when"].startswith("central_store_victoria_metrics_src")
    assert roles["egress"]["when"].startswith("egress_gateway_binary_src")
