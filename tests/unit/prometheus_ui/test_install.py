"""The web UI off the critical path: a cached build goes in with the bring-up, none starts `lab web-ui` in
the background (once) with a status line saying so, and `lab web-ui` installs a build through the
prometheus role's own tasks (ansible/web-ui.yml) or leaves the reason in the status line."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab import versions
from lab.bringup import lock
from lab.paths import ANSIBLE_DIR
from lab.progress import Progress
from lab.prometheus_ui import build, install


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    (tmp_path / "lab1").mkdir()
    return tmp_path


def _cache(root: Path) -> Path:
    entry = build.entry_dir(versions.PROMETHEUS_UI_ARCHIVE_SHA256, root)
    entry.mkdir(parents=True)
    (entry / versions.PROMETHEUS_UI_ARCHIVE).write_bytes(b"tarball")
    (entry / "build.json").write_text('{"how": "built from the tag"}')
    return entry / versions.PROMETHEUS_UI_ARCHIVE


def test_a_cached_build_goes_in_with_the_bring_up(state: Path) -> None:
    tarball = _cache(state)
    hit = install.for_bring_up("lab1", Progress(quiet=True))
    assert hit is not None and hit.tarball == tarball
    assert install.status_file("lab1").read_text() == f"built from the tag → {tarball}\n"


def test_without_a_cached_build_the_bring_up_does_not_wait(state: Path) -> None:
    assert install.for_bring_up("lab1", Progress(quiet=True)) is None
    assert not install.status_file("lab1").exists()


def test_the_background_build_is_lab_web_ui_with_the_source_given(monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[tuple[str, list[str], str]] = []

    def launch(self: Any, lab: str, args: list[str], meanwhile: str) -> tuple[int, str]:
        launched.append((lab, args, meanwhile))
        return 4242, "being built"

    monkeypatch.setattr(install.detached.BackgroundInstall, "launch", launch)
    assert install.install_later("lab1", Path("/src/ui.tar.gz"), Progress(quiet=True)) == 4242
    assert install.install_later("lab1", None, Progress(quiet=True)) == 4242
    meanwhile = "Debian's page until it is installed"
    assert launched == [
        ("lab1", ["web-ui", "--lab", "lab1", "--source", "/src/ui.tar.gz"], meanwhile),
        ("lab1", ["web-ui", "--lab", "lab1"], meanwhile),
    ]


def test_install_runs_the_roles_web_ui_tasks_on_the_labs_inventory(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tarball = _cache(state)
    hosts = state / "lab1" / "ansible" / "inventory" / "hosts.yml"
    hosts.parent.mkdir(parents=True)
    hosts.write_text("all: {}\n")
    runs: list[dict[str, Any]] = []

    def run_playbook(
        private: Path, inventory: Path, extravars: dict[str, Any], progress: Any, playbook: str
    ) -> None:
        runs.append({"private": private, "hosts": inventory, "vars": extravars, "playbook": playbook})

    monkeypatch.setattr(install, "run_playbook", run_playbook)
    assert install.install("lab1", None, Progress(quiet=True)) is not None
    assert runs == [
        {
            "private": state / "lab1" / "ansible",
            "hosts": hosts,
            "vars": {build.INSTALL_VAR: str(tarball)},
            "playbook": "web-ui.yml",
        }
    ]
    assert install.status_file("lab1").read_text().endswith("(installed)\n")


def test_the_install_waits_for_the_bring_up_that_started_it(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`lab up` starts the build before it provisions: the playbook runs once `lab up` lets go of the lab."""
    _cache(state)
    hosts = state / "lab1" / "ansible" / "inventory" / "hosts.yml"
    events: list[str] = []
    monkeypatch.setattr(install, "run_playbook", lambda *a, **k: events.append("installed"))
    bring_up = lock.held(state / "lab1", "up")
    bring_up.__enter__()

    def provision() -> None:
        while not any(line.startswith("waiting for") for line in events):  # the install waits
            time.sleep(0.01)
        hosts.parent.mkdir(parents=True)
        hosts.write_text("all: {}\n")  # the inventory comes with the bring-up
        events.append("up")
        bring_up.__exit__(None, None, None)

    monkeypatch.setattr(Progress, "say", lambda self, line: events.append(line))
    thread = threading.Thread(target=provision)
    thread.start()
    assert install.install("lab1", None, Progress(quiet=True)) is not None
    thread.join()
    waited = f"waiting for `lab up` (pid {os.getpid()}) to finish with lab 'lab1'"
    assert [e for e in events if e in (waited, "up", "installed")] == [waited, "up", "installed"]


def test_a_ui_that_cannot_be_built_leaves_the_reason_and_installs_nothing(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(install, "run_playbook", lambda *a, **k: pytest.fail("nothing to install"))
    assert install.install("lab1", state / "absent.tar.gz", Progress(quiet=True)) is None
    assert install.status_file("lab1").read_text().startswith("not built, Debian's page")


def test_the_playbook_runs_the_prometheus_roles_own_web_ui_tasks() -> None:
    plays = yaml.safe_load((ANSIBLE_DIR / install.PLAYBOOK).read_text())
    assert [play["hosts"] for play in plays] == ["prometheus"]
    task = plays[0]["tasks"][0]["ansible.builtin.include_role"]
    assert task == {"name": "prometheus", "tasks_from": "web_ui"}
    assert (ANSIBLE_DIR / "roles" / "prometheus" / "tasks" / "web_ui.yml").is_file()


def test_status_says_while_the_ui_is_built_and_when_that_stopped_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install.status_file("lab1").write_text("being built in the background since 08:00:00 (pid 7, log x)\n")
    monkeypatch.setattr(install.detached, "running_pid", lambda lab, name: 7)
    assert install.facts("lab1")["prometheus_ui"].startswith("being built in the background")
    assert install.pending("lab1")
    monkeypatch.setattr(install.detached, "running_pid", lambda lab, name: None)
    line = install.facts("lab1")["prometheus_ui"]
    assert line.startswith("the background build stopped before it was done") and "`lab web-ui`" in line
    assert not install.pending("lab1")
