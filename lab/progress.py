"""Progress lines for long work: one line per step, with elapsed seconds, on stderr."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Progress:
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.started = time.monotonic()

    def say(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.monotonic() - self.started
            print(f"[{elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        self.say(f"{message} …")
        began = time.monotonic()
        yield
        self.say(f"{message}: done in {time.monotonic() - began:.1f}s")
