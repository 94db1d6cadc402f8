"""A drill, what it records while it runs, and its outcome."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lab.drill.checks import Check, Expected
from lab.drill.probe import Probe


@dataclass
class Record:
    """What a drill found: its checks, when the fault went in, and how long recovery took."""

    checks: list[Check] = field(default_factory=list)
    recover_s: float | None = None
    notes: list[str] = field(default_factory=list)
    broken: set[str] = field(default_factory=set)  # scrape targets (job/instance) the drill broke
    expected: list[Expected] = field(default_factory=list)
    restored_at: float | None = None  # Unix time the drill's restore began
    alert_times: list[dict[str, object]] = field(default_factory=list)  # per expected alert, for the report

    def check(self, name: str, passed: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, bool(passed), detail))
        return bool(passed)

    def expect(self, alert: str, **labels: str) -> None:
        """The fault goes in now and must cause ``alert`` with ``labels`` (a subset of its labels)."""
        self.expected.append(Expected(alert, labels, time.time()))

    def restoring(self) -> None:
        """The restore begins now: every expected alert must resolve after it."""
        self.restored_at = time.time()

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
    alerts: str  # the alert(s) the fault must cause, or "none" and why none is right
    fast: bool = True  # in the CI subset (`lab drill fast`)
    room: int = 0  # free GPUs its jobs need on one node, reserved for it (lab.drill.room); 0: no jobs


@dataclass(frozen=True)
class Outcome:
    drill: Drill
    checks: list[Check]
    recover_s: float | None
    seconds: float
    error: str = ""
    notes: tuple[str, ...] = ()
    alert_times: tuple[dict[str, object], ...] = ()

    @property
    def passed(self) -> bool:
        return not self.error and bool(self.checks) and all(c.passed for c in self.checks)
