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
