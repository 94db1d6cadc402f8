"""One lab command at a time per lab: `lab up` and `lab down` hold the lab's lock while they work."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LabBusyError(RuntimeError):
    """Another lab command holds the lab; the message names it."""


@contextmanager
def held(state_dir: Path, what: str) -> Iterator[None]:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "lock"
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise LabBusyError(
                f"{holder} is working on this lab ({path}). Wait for it to finish, or stop it, then retry."
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"`lab {what}` (pid {os.getpid()})")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
