"""A drill, what it records while it runs, and its outcome."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lab.drill.checks import Check
from lab.drill.probe import Probe


@dataclass
class Record:
    """What a drill found: its checks, when the fault went in, and how long recovery took."""

    checks: list[Check] = field(default_factory=list)
    recover_s: float | None = None
    notes: list[str] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)  # scrape targets (job/instance) the drill broke

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def recovered_since(self, began: float) -> float:
        """Mark recovery now, ``began`` being the monotonic time the restore (or the fault) began."""
        self.recover_s = time.monotonic() - began
        return self.recover_s


@dataclass(frozen=True)
class Drill:
    name: str
    breaks: str  # what is broken, and with which real mechanism
    run: Callable[[Probe, Record], None]  # injects, checks, restores (restores even when a step fails)
    minutes: float  # about how long it takes on the lab's 2-core machine
    fast: bool = True  # in the CI subset (`lab drill fast`)


@dataclass(frozen=True)
class Outcome:
    drill: Drill
    checks: list[Check]
    recover_s: float | None
    seconds: float
    error: str = ""
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.error and bool(self.checks) and all(c.passed for c in self.checks)
