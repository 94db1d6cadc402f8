"""One lab command at a time per lab: `lab up` and `lab down` hold the lab's lock while they work; a
background install waits for it (:func:`held` with ``wait_s``), and `lab up` for a background install
(:func:`for_bring_up`). The same lock, on a cache directory, makes one build of a cached artefact at a
time across processes (:func:`building`)."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from lab.progress import Progress

POLL_S = 0.5
# How long `lab up` waits for the lab: a background install's Ansible run holds it for seconds, another
# command for a minute or two; longer is a command that hangs, and `lab up` names it.
UP_WAIT_S = 600


class LabBusyError(RuntimeError):
    """Another lab command holds the lab; the message names it."""


@contextmanager
def held(
    state_dir: Path, what: str, wait_s: float = 0, on_wait: Callable[[str], object] | None = None
) -> Iterator[None]:
    """The lab's lock for `lab <what>`; refused at once (``wait_s`` 0) or after ``wait_s`` seconds of
    waiting, with the holder named. ``on_wait`` hears the holder once, when the wait begins."""
    path = state_dir / "lock"
    with _locked(path, what, wait_s, on_wait) as holder:
        if holder is not None:
            raise LabBusyError(
                f"{holder} is working on this lab ({path}). Wait for it to finish, or stop it, then retry."
            )
        yield


@contextmanager
def waited_for(state_dir: Path, lab: str, what: str, wait_s: float, progress: Progress) -> Iterator[None]:
    """:func:`held` for `lab <what>` after a wait of up to ``wait_s`` for whatever holds the lab (said)."""

    def waiting(holder: str) -> None:
        progress.say(f"waiting for {holder} to finish with lab '{lab}'")

    with held(state_dir, what, wait_s, waiting):
        yield


@contextmanager
def for_bring_up(state_dir: Path, lab: str, progress: Progress) -> Iterator[None]:
    """`lab up`'s hold on the lab, after a wait of up to UP_WAIT_S for whatever holds it (said once)."""
    with waited_for(state_dir, lab, "up", UP_WAIT_S, progress):
        yield


@contextmanager
def building(cache_dir: Path, what: str, on_wait: Callable[[str], object]) -> Iterator[None]:
    """One build into ``cache_dir`` at a time (`lab <what>` builds): a second waits for the first, then
    finds its entry. The build steps have time limits of their own, and a holder that dies lets go."""
    with _locked(cache_dir / ".build.lock", what, float("inf"), on_wait):
        yield


@contextmanager
def _locked(
    path: Path, what: str, wait_s: float, on_wait: Callable[[str], object] | None
) -> Iterator[str | None]:
    """Yields None with the lock held and the holder's line written, else (after ``wait_s``) the
    holder's line, with nothing held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        holder = _acquire(handle, wait_s, on_wait)
        if holder is not None:
            yield holder
            return
        handle.seek(0)
        handle.truncate()
        handle.write(f"`lab {what}` (pid {os.getpid()})")
        handle.flush()
        try:
            yield None
        finally:
            handle.seek(0)
            handle.truncate()


def _acquire(handle: IO[str], wait_s: float, on_wait: Callable[[str], object] | None) -> str | None:
    """None once the lock is taken; the holder's line when ``wait_s`` ran out first."""
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            if time.monotonic() >= deadline:
                return holder
            if on_wait is not None and not told:
                on_wait(holder)
                told = True
            time.sleep(POLL_S)
