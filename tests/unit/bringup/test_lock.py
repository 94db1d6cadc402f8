import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

from lab.bringup import lock
from lab.progress import Progress

pytestmark = pytest.mark.race


def test_a_second_command_on_the_same_lab_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    with (
        lock.held(tmp_path, "up"),
        pytest.raises(lock.LabBusyError, match=r"`lab up` \(pid \d+\) is working on this lab"),
        lock.held(tmp_path, "down"),
    ):
        pass
    with lock.held(tmp_path, "down"):  # released when the first command ends
        pass


def test_other_labs_are_not_blocked(tmp_path: Path) -> None:
    with lock.held(tmp_path / "one", "up"), lock.held(tmp_path / "two", "up"):
        pass


def _release_after(seconds: float, holder: contextlib.AbstractContextManager[None]) -> threading.Thread:
    def release() -> None:
        time.sleep(seconds)  # the holder's work; the waiter polls the lock meanwhile
        holder.__exit__(None, None, None)

    thread = threading.Thread(target=release)
    thread.start()
    return thread


def test_a_waiting_command_takes_the_lab_once_the_holder_lets_go(tmp_path: Path) -> None:
    up = lock.held(tmp_path, "up")
    up.__enter__()
    heard: list[str] = []
    thread = _release_after(0.5, up)
    with lock.held(tmp_path, "web-ui", wait_s=30, on_wait=heard.append):
        assert (tmp_path / "lock").read_text().startswith("`lab web-ui` (pid ")
    thread.join()
    assert len(heard) == 1 and heard[0].startswith("`lab up` (pid ")


def test_a_wait_that_runs_out_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    with lock.held(tmp_path, "up"):
        started = time.monotonic()
        with pytest.raises(lock.LabBusyError, match=r"`lab up` \(pid \d+\)"), lock.held(tmp_path, "x", 0.3):
            pass
        assert time.monotonic() - started >= 0.3


def test_one_build_into_a_cache_at_a_time(tmp_path: Path) -> None:
    events: list[str] = []

    def build(name: str) -> None:
        with lock.building(tmp_path, "web-ui", lambda holder: events.append(f"{name} waits")):
            events.append(f"{name} builds")
            time.sleep(0.3)  # long enough for the other to find the lock taken
            events.append(f"{name} done")

    first = threading.Thread(target=build, args=("first",))
    first.start()
    while "first builds" not in events:
        time.sleep(0.01)
    build("second")
    first.join()
    assert events == ["first builds", "second waits", "first done", "second builds", "second done"]


def test_lab_up_waits_for_a_background_install_and_says_so(tmp_path: Path) -> None:
    install = lock.held(tmp_path, "web-ui")
    install.__enter__()
    said: list[str] = []
    progress = Progress(quiet=True)
    progress.say = said.append  # type: ignore[method-assign]
    thread = _release_after(0.5, install)
    with lock.for_bring_up(tmp_path, "lab1", progress):
        assert (tmp_path / "lock").read_text().startswith("`lab up` (pid ")
    thread.join()
    assert said == [f"waiting for `lab web-ui` (pid {os.getpid()}) to finish with lab 'lab1'"]
