"""Scheduler log lines in KAI's format (``pkg/scheduler/log/log.go``, KAI v0.13.0).

``InitLoggers`` builds zap's production config with the console encoder wrapped in a session-ID
encoder, ``ISO8601TimeEncoder`` and ``CapitalColorLevelEncoder``; fields are tab-separated and the
level carries ANSI colour codes (KAI issues #1039 and #1592 quote ``\\x1b[34mINFO\\x1b[0m``). The
message is prefixed ``[<sessionID>] [<action>]``, both wrapped in a colour picked by
``fnv32a(text) % 8`` (minimum 1). The session ID is a UUID v1 (``uuid.NewUUID()`` in scheduler.go).
A line (escapes shown as ``\\x1b``)::

    2026-03-02T00:10:00.000Z\\t\\x1b[34mINFO\\x1b[0m\\t[\\x1b[36m6f1c…\\x1b[0m] [\\x1b[32mallocate\\x1b[0m]
      Enter Allocate ...  (one line; wrapped here)

zap's production config also writes a ``caller`` column (``allocate/allocate.go:NN``); line numbers at
v0.13.0 were not confirmed, so the emulator omits that column (PENDING in signals/runai.md).
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

# zapcore CapitalColorLevelEncoder colours: Debug magenta, Info blue, Warn yellow, Error red.
_LEVEL_COLOUR = {"DEBUG": 35, "INFO": 34, "WARN": 33, "ERROR": 31}
_GREGORIAN_OFFSET_100NS = 0x01B21DD213814000  # 1582-10-15 -> 1970-01-01 in 100 ns ticks


def fnv32a(text: str) -> int:
    value = 0x811C9DC5
    for byte in text.encode():
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def colour(text: str) -> str:
    """``wrapTextWithColor``: ``\\x1b[3<c>m`` + text + ``\\x1b[0m``, c = max(1, fnv32a % 8)."""
    code = max(1, fnv32a(text) % 8)
    return f"\x1b[3{code}m{text}\x1b[0m"


def iso8601(epoch: float) -> str:
    """zapcore.ISO8601TimeEncoder: ``2006-01-02T15:04:05.000Z0700`` (UTC prints ``Z``)."""
    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def session_id(epoch: float, rng: random.Random) -> str:
    """A UUID version 1 whose timestamp is the simulated time (deterministic per seed)."""
    ticks = int(epoch * 1e7) + _GREGORIAN_OFFSET_100NS
    time_low = ticks & 0xFFFFFFFF
    time_mid = (ticks >> 32) & 0xFFFF
    time_hi = ((ticks >> 48) & 0x0FFF) | 0x1000
    clock_seq = rng.getrandbits(14) | 0x8000
    node = rng.getrandbits(48)
    return str(uuid.UUID(fields=(time_low, time_mid, time_hi, clock_seq >> 8, clock_seq & 0xFF, node)))


def line(epoch: float, level: str, session: str, action: str, message: str) -> str:
    prefix = f"[{colour(session)}] [{colour(action)}] " if action else f"[{colour(session)}] "
    return f"{iso8601(epoch)}\t\x1b[{_LEVEL_COLOUR[level]}m{level}\x1b[0m\t{prefix}{message}"
