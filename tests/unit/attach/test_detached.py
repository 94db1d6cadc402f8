"""Processes beside a running lab: started detached with their pid and log in the lab's state directory,
found again by any later command, gone once they exit, stopped by `lab down`."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from lab.attach import detached


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    return tmp_path


def _wait_until_gone(lab: str, name: str, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while detached.running_pid(lab, name) is not None:
        assert time.monotonic() < deadline, f"{name} still runs after {deadline_s} s"
        time.sleep(0.1)


def test_a_detached_lab_command_runs_with_its_pid_and_log_in_the_state_directory(state: Path) -> None:
    pid = detached.start("lab1", "help", ["--help"])
    assert (state / "lab1" / "help.pid").read_text() == f"{pid}\n"
    _wait_until_gone("lab1", "help")
    assert "Usage" in (state / "lab1" / "help.log").read_text()


def test_stop_ends_a_running_process_and_forgets_it(state: Path) -> None:
    # A process detached as the real ones are (not this test's child: init reaps it, no zombie).
    shell = subprocess.run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
    (state / "lab1").mkdir()
    (state / "lab1" / "sleeper.pid").write_text(shell.stdout)
    assert detached.running_pid("lab1", "sleeper") == int(shell.stdout)
    assert detached.stop("lab1", "sleeper") is True
    assert detached.running_pid("lab1", "sleeper") is None
    assert not (state / "lab1" / "sleeper.pid").exists()


def test_a_stale_pid_file_is_not_a_running_process(state: Path) -> None:
    (state / "lab1").mkdir()
    (state / "lab1" / "gone.pid").write_text("999999999\n")
    assert detached.running_pid("lab1", "gone") is None
    assert detached.stop("lab1", "gone") is False


INSTALL = detached.BackgroundInstall("thing", "thing-status", "lab thing")


def test_a_background_install_starts_once_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[list[str]] = []
    running: dict[str, int] = {}

    def start(lab: str, name: str, args: list[str]) -> int:
        started.append(args)
        running[name] = 4242
        return 4242

    monkeypatch.setattr(detached, "start", start)
    monkeypatch.setattr(detached, "running_pid", lambda lab, name: running.get(name))
    assert INSTALL.status("lab1") is None  # no `lab up` wrote a line yet
    pid, line = INSTALL.launch("lab1", ["thing", "--lab", "lab1"], "the old one until then")
    assert pid == 4242 and INSTALL.launch("lab1", ["thing"], "the old one until then")[0] == 4242
    assert started == [["thing", "--lab", "lab1"]]
    assert line.startswith("being built in the background since ") and "(pid 4242, log " in line
    assert INSTALL.status("lab1") == line and line.endswith("; the old one until then")
    assert INSTALL.pending("lab1")
    running.clear()  # it ended without its last word: the line says so instead of "being built"
    stopped = INSTALL.status("lab1")
    assert stopped is not None and stopped.startswith("the background build stopped before it was done")
    assert "`lab thing` builds and installs it" in stopped and not INSTALL.pending("lab1")


def test_a_background_install_keeps_its_last_word(state: Path) -> None:
    INSTALL.say("lab1", "installed")
    assert (state / "lab1" / "thing-status").read_text() == "installed\n"
    assert INSTALL.status("lab1") == "installed"
    assert INSTALL.cancel("lab1") is False  # nothing running
