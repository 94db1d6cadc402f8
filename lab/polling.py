"""How often a wait looks again: every ``every_s`` at first, then half as long again after each look, up
to MAX_EVERY_S. A look is often a `docker exec` (about 90 ms of CPU across the docker client, dockerd,
containerd and runc, measured here on 2026-12-07), so a long wait that looked twice a second would take
a fifth of a core from the labs beside it on a 2-core machine; a state that holds is still seen within
MAX_EVERY_S of its start."""

from __future__ import annotations

from collections.abc import Iterator

MAX_EVERY_S = 2.0
GROWTH = 1.5


def pauses(every_s: float) -> Iterator[float]:
    """The pauses between looks: ``every_s``, then each GROWTH times the last, at most MAX_EVERY_S (or
    ``every_s`` when that is longer)."""
    pause, longest = every_s, max(every_s, MAX_EVERY_S)
    while True:
        yield pause
        pause = min(pause * GROWTH, longest)
