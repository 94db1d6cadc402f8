"""The lab's fault record: one JSON line per fault put in or taken out, ``<lab state>/faults.jsonl``.

Everything that breaks a running lab on purpose writes here: `lab fault`, the drills, and the lab
tests that plant files, kill daemons or restart nodes. Two readers depend on it:

- work that measures over a window (`lab churn`'s bound, a test's churn or gap window) starts the
  window after the last fault had settled (:func:`settled_since`), instead of looking back a fixed
  time and reaching over another's fault;
- the lab tests' guard fails a test that returns with a fault still in (:func:`active`).

A fault is *cleared* once its cause is gone (the XID file reset, the node booted). Prometheus shows
the healthy value from the first scrape after that, so :func:`settled_since` adds the settling time
the caller gives (two scrape intervals in the lab's own readers), except after a clear whose writer
saw the healthy series in Prometheus itself (``settled=True``: a drill that waited for every target to
be scraped again, a test that polled until the faulted series were gone).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from lab.paths import lab_state_dir

RECORD_FILE = "faults.jsonl"
Action = Literal["injected", "cleared"]


class FaultRecordError(ValueError):
    """A fault record line that is not what :func:`record` writes; the message names file and line."""


@dataclass(frozen=True)
class FaultEvent:
    at: float  # Unix time, seconds
    kind: str  # what broke: xid, throttle, mapping-file, node-restart, drill:<name>, …
    target: str  # where: node, node/gpu, daemon@host, workload
    action: Action
    by: str  # who put it in: `lab fault`, `lab drill`, a test's node id
    detail: str = ""
    settled: bool = False  # a clear whose writer saw Prometheus show the healthy series again

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.target


def record_path(lab: str) -> Path:
    return lab_state_dir(lab) / RECORD_FILE


def record(
    lab: str,
    kind: str,
    target: str,
    action: Action,
    by: str,
    detail: str = "",
    settled: bool = False,
) -> FaultEvent:
    """Append one event, stamped now. One ``write`` of a line under O_APPEND: writers in several
    processes (a test, `lab fault`, a drill) never interleave inside a line."""
    event = FaultEvent(time.time(), kind, target, action, by, detail, settled and action == "cleared")
    path = record_path(lab)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(asdict(event), sort_keys=True) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)
    return event


def read(lab: str) -> list[FaultEvent]:
    """Every event, oldest first; none for a lab that never had a fault."""
    path = record_path(lab)
    if not path.exists():
        return []
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            fields = json.loads(line)
            events.append(FaultEvent(**fields))
        except (ValueError, TypeError) as error:
            raise FaultRecordError(
                f"{path}:{number}: not a fault event ({error}). Fix: remove the line; "
                "`lab down --purge` also removes the record."
            ) from error
    return events


def active(lab: str) -> list[FaultEvent]:
    """The faults put in and not yet cleared, each as the event that put it in."""
    current: dict[tuple[str, str], FaultEvent] = {}
    for event in read(lab):
        if event.action == "injected":
            current[event.key] = event
        else:
            current.pop(event.key, None)
    return sorted(current.values(), key=lambda e: e.at)


def settled_since(lab: str, settle_s: float) -> float:
    """The earliest time a window may start so that it sees no fault of the record: the last event,
    plus ``settle_s`` unless it was a settled clear (a fault still in gives +inf: no window is clean
    of it)."""
    if active(lab):
        return float("inf")
    events = read(lab)
    if not events:
        return 0.0
    last = max(events, key=lambda e: e.at)
    return last.at + (0.0 if last.settled else settle_s)


def within(lab: str, start: float, end: float, settle_s: float) -> list[FaultEvent]:
    """The faults whose time in the lab (from injection to clear, plus ``settle_s`` after an
    unsettled clear; to now while still in) overlaps [start, end], each as the event that put it in:
    what a report over that window names when the window looks broken."""
    opened: dict[tuple[str, str], FaultEvent] = {}
    overlapping: list[FaultEvent] = []
    for event in read(lab):
        if event.action == "injected":
            opened.setdefault(event.key, event)
            continue
        began = opened.pop(event.key, None)
        settled = event.at + (0.0 if event.settled else settle_s)
        if began is not None and began.at <= end and settled >= start:
            overlapping.append(began)
    overlapping += [event for event in opened.values() if event.at <= end]
    return sorted(overlapping, key=lambda e: e.at)


@dataclass
class Open:
    """A fault while its block runs; the block sets ``settled`` once it saw Prometheus show the
    healthy series again after taking the fault out."""

    event: FaultEvent
    settled: bool = False


@contextmanager
def fault(lab: str, kind: str, target: str, by: str, detail: str = "") -> Iterator[Open]:
    """Record the fault as in for the block and as cleared when the block ends, however it ends: the
    block puts the fault in and takes it out again."""
    opened = Open(record(lab, kind, target, "injected", by, detail))
    try:
        yield opened
    finally:
        record(lab, kind, target, "cleared", by, detail, settled=opened.settled)
