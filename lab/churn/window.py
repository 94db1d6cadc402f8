"""The analysis window: its evaluation grid, its chunks, and per-hour rates in lab and real time.

A window is ``steps`` evaluations ``start + k·step`` for ``k = 1 … steps``; ``start`` itself is not
evaluated, so an event counted at ``t_k`` happened in ``(t_(k-1), t_k]`` and the whole window covers
``(start, end]`` with no instant counted twice, also across chunks.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str) -> float:
    """Prometheus-style durations: ``15s``, ``5m``, ``1h30m``, ``2d``; a bare number is seconds."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = list(_DURATION.finditer(text))
        if not parts or "".join(p.group(0) for p in parts) != text:
            raise ValueError(f"{text!r} is not a duration (examples: 90s, 15m, 1h, 1h30m, 2d)") from None
        seconds = sum(float(p.group(1)) * _UNIT_S[p.group(2)] for p in parts)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{text!r} is not a positive duration")
    return seconds


def parse_time(text: str) -> float:
    """Unix seconds, or ISO 8601 (``2026-11-30T10:30:00Z``; without an offset the time is UTC)."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a time (use 2026-11-30T10:30:00Z or Unix seconds)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def bounds(since: str | None, start: str | None, end: str | None, now: float) -> tuple[float, float]:
    """The window from ``--since`` (ending ``now``; 1 h if nothing is given) or ``--start``/``--end``."""
    if start is not None:
        if since is not None:
            raise ValueError("give either --since or --start/--end, not both")
        first, last = parse_time(start), parse_time(end) if end is not None else now
    else:
        if end is not None:
            raise ValueError("--end needs --start (or use --since for a window ending now)")
        first, last = now - parse_duration(since or "1h"), now
    if last <= first:
        raise ValueError(f"the window ends ({iso(last)}) before it starts ({iso(first)})")
    return first, last


def step_seconds(step: str | None, scrape_intervals: dict[str, float]) -> int:
    """``--step``, else the shortest scrape interval (15 s if Prometheus lists no target)."""
    seconds = parse_duration(step) if step is not None else min(scrape_intervals.values(), default=15.0)
    if seconds != int(seconds) or seconds < 1:
        raise ValueError(f"--step {step}: Prometheus is asked in whole seconds here (e.g. 15s)")
    return int(seconds)


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Window:
    start: float  # not evaluated: the first evaluation is start + step
    step_s: int
    steps: int

    @classmethod
    def between(cls, start: float, end: float, step_s: int) -> Window:
        """The longest grid of whole steps from ``start`` that ends at or before ``end``."""
        if step_s < 1:
            raise ValueError("the step must be at least 1 s (Prometheus takes whole seconds here)")
        steps = math.floor((end - start) / step_s + 1e-9)
        if steps < 1:
            raise ValueError(f"the window {iso(start)} … {iso(end)} is shorter than one step ({step_s} s)")
        return cls(round(start, 3), step_s, steps)

    @property
    def end(self) -> float:
        return self.time(self.steps)

    @property
    def duration_s(self) -> float:
        return float(self.steps * self.step_s)

    def time(self, k: int) -> float:
        """The k-th evaluation (1-based); ``time(0)`` is ``start``."""
        return round(self.start + k * self.step_s, 3)

    def times(self) -> list[float]:
        return [self.time(k) for k in range(1, self.steps + 1)]

    def index(self, t: float) -> int:
        """0-based position of the evaluation at ``t`` (as Prometheus returns it) in :meth:`times`."""
        return round((t - self.start) / self.step_s) - 1

    def chunks(self, max_steps: int) -> list[Window]:
        """Consecutive windows of at most ``max_steps`` steps; each starts where the one before ended."""
        size = max(1, max_steps)
        return [
            Window(self.time(first), self.step_s, min(size, self.steps - first))
            for first in range(0, self.steps, size)
        ]


@dataclass(frozen=True)
class Rate:
    """Events per hour: of the lab's clock, and of the real time the workload stands for."""

    lab_per_hour: float
    real_per_hour: float


def per_hour(count: float, duration_s: float, time_scale: float = 1.0) -> Rate:
    """``count`` events over ``duration_s`` lab seconds of a workload played ``time_scale`` times fast.

    The workload compresses time: one lab second stands for ``time_scale`` real seconds, so a lab
    hour holds ``time_scale`` real hours of jobs and the real-time rate is the lab rate / time_scale.
    """
    if duration_s <= 0 or time_scale <= 0:
        raise ValueError("duration and time scale must be positive")
    lab = count * 3600.0 / duration_s
    return Rate(lab, lab / time_scale)
