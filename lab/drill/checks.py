"""What every drill checks afterwards, as pure functions of what the lab answered.

* **Nothing lost in accounting**: every job submitted during the drill is in ``sacct``; every one
  that is no longer in the queue has a terminal state there.
* **No scrape gap**: for every target that was not the one broken, successive successful scrapes
  (``up == 1``, read as raw samples from ``up[<window>]``) are never further apart than two scrape
  intervals, counting from the window's start to its end.
* **The alerts, as the receiver got them**: each alert the fault must cause was delivered firing in
  one episode (one ``startsAt``: the site is told once, not again and again as it flaps), with the
  labels that name the broken part, and delivered resolved after the restore; and no other alert began
  during the drill, neither delivered nor firing in Prometheus (alerts already pending or firing before
  the drill are the lab's standing ones and are left out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.alerts.listing import Delivered

# sacct's base states that end a job (slurm/slurm.h job_states after JOB_SUSPENDED; REQUEUED is not one).
TERMINAL = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "TIMEOUT",
    }
)


@dataclass(frozen=True)
class Check:
    """One thing a drill verified: what, whether it held, and the evidence."""

    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class Expected:
    """An alert the drill's fault must cause: its name, the labels that name the broken part, and the
    Unix time the fault went in."""

    alert: str
    labels: dict[str, str]
    injected_at: float


def base_state(state: str) -> str:
    """sacct prints ``CANCELLED by 2001``: the state is the first word."""
    return state.split(" ")[0] if state else ""


def accounting_check(submitted: Iterable[str], accounted: Mapping[str, str], queued: set[str]) -> Check:
    """Every submitted job is in accounting, and every job that left the queue ended there."""
    wanted = sorted(set(submitted), key=_numeric)
    missing = [job for job in wanted if job not in accounted]
    unfinished = [
        f"{job}={accounted[job]}"
        for job in wanted
        if job in accounted and job not in queued and base_state(accounted[job]) not in TERMINAL
    ]
    problems = [f"not in sacct: {', '.join(missing)}"] if missing else []
    if unfinished:
        problems.append(f"left the queue without a terminal state: {', '.join(unfinished)}")
    return Check(
        "every job submitted during the drill is in sacct, ended ones with a terminal state",
        not problems,
        "; ".join(problems) or f"{len(wanted)} jobs accounted",
    )


def longest_gap(success_times: list[float], start: float, end: float) -> float:
    """The longest stretch of [start, end] with no successful scrape in it."""
    edges = [start, *sorted(t for t in success_times if start <= t <= end), end]
    return max(b - a for a, b in pairwise(edges))


def scrape_gap_check(
    samples: Mapping[str, list[tuple[float, float]]],
    interval_s: float,
    start: float,
    end: float,
    broken: set[str],
) -> Check:
    """``samples``: target (``job/instance``) → its raw ``up`` samples. Targets in ``broken`` are the
    drill's own and may have gaps; any other target's longest gap must stay ≤ 2 scrape intervals."""
    allowed = 2 * interval_s
    gaps = {
        target: longest_gap([t for t, value in points if value == 1], start, end)
        for target, points in samples.items()
        if target not in broken
    }
    over = {target: gap for target, gap in gaps.items() if gap > allowed}
    worst = max(gaps.values(), default=0.0)
    return Check(
        f"no scrape gap over 2 intervals ({allowed:.0f} s) for the targets not broken",
        bool(gaps) and not over,
        ", ".join(f"{target}: {gap:.1f} s" for target, gap in sorted(over.items()))
        or (f"{len(gaps)} targets, longest gap {worst:.1f} s" if gaps else "no target was scraped"),
    )


def unix(stamp: str) -> float:
    """Alertmanager's and the receiver's RFC 3339 times (nanoseconds cut to microseconds)."""
    head, dot, tail = stamp.partition(".")
    if dot:
        digits = "".join(c for c in tail if c.isdigit())
        stamp = f"{head}.{digits[:6]}{tail[len(digits) :]}"
    return datetime.fromisoformat(stamp).timestamp()


def _carries(labels: Mapping[str, str], wanted: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


def matches(labels: Mapping[str, str], alert: str, wanted: Mapping[str, str]) -> bool:
    return labels.get("alertname") == alert and _carries(labels, wanted)


def _name(alert: str, labels: Mapping[str, str]) -> str:
    shown = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "alertname")
    return f"{alert}{{{shown}}}"


def delivered_alerts(deliveries: Iterable[Delivered], since: float) -> list[tuple[float, dict[str, Any]]]:
    """(received at, alert) for every alert of every notification received at or after ``since``."""
    return [
        (unix(note.received_at), alert)
        for note in deliveries
        if unix(note.received_at) >= since
        for alert in note.alerts
    ]


def expected_alert_checks(
    expected: Iterable[Expected], restored_at: float | None, received: list[tuple[float, dict[str, Any]]]
) -> tuple[list[Check], list[dict[str, object]]]:
    """Per expected alert: delivered firing in one episode, then resolved after the restore. Also the
    times from the fault to the first delivery and from the restore to the resolved one."""
    checks: list[Check] = []
    times: list[dict[str, object]] = []
    for want in expected:
        ours = [(at, a) for at, a in received if matches(a["labels"], want.alert, want.labels)]
        firing = sorted(at for at, a in ours if a["status"] == "firing")
        episodes = {a["startsAt"] for _, a in ours if a["status"] == "firing"}
        resolved = sorted(
            at for at, a in ours if a["status"] == "resolved" and restored_at and at >= restored_at
        )
        name = _name(want.alert, want.labels)
        count = f"{len(episodes)} episode{'' if len(episodes) == 1 else 's'}"
        delivered_s = firing[0] - want.injected_at if firing else None
        resolved_s = resolved[0] - restored_at if resolved and restored_at else None
        checks.append(
            Check(
                f"{name} delivered firing once",
                len(episodes) == 1,
                f"{count}; first {delivered_s:.1f} s after the fault"
                if delivered_s is not None
                else "never delivered",
            )
        )
        checks.append(
            Check(
                f"{name} delivered resolved after the restore",
                resolved_s is not None,
                f"{resolved_s:.1f} s after the restore"
                if resolved_s is not None
                else "not delivered resolved",
            )
        )
        times.append(
            {
                "alert": want.alert,
                "labels": want.labels,
                "delivered_s": _tenths(delivered_s),
                "resolved_s": _tenths(resolved_s),
            }
        )
    return checks, times


def _tenths(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def nothing_else_check(
    expected: Iterable[Expected],
    received: list[tuple[float, dict[str, Any]]],
    since: float,
    firing_in_window: Iterable[Mapping[str, str]],
    standing: Iterable[Mapping[str, str]],
) -> Check:
    """No alert but the expected began during the drill: none delivered with a ``startsAt`` in it, and
    none firing in Prometheus' window. ``standing``: the alerts pending or firing when the drill began
    (without ``alertstate``); they and their deliveries (which add Prometheus' external labels) are
    the lab's own before the drill, not the drill's."""
    wanted = list(expected)
    before = [dict(labels) for labels in standing]

    def explained(labels: Mapping[str, str]) -> bool:
        return any(matches(labels, w.alert, w.labels) for w in wanted) or any(
            _carries(labels, old) for old in before
        )

    others = {
        _name(a["labels"].get("alertname", ""), a["labels"])
        for _, a in received
        if unix(a["startsAt"]) >= since and not explained(a["labels"])
    }
    others |= {
        _name(labels.get("alertname", ""), labels) for labels in firing_in_window if not explained(labels)
    }
    allowed = ", ".join(sorted({w.alert for w in wanted})) or "none"
    return Check(
        f"no alert began during the drill but the expected ({allowed})",
        not others,
        "; ".join(sorted(others)) or f"{len(before)} alert(s) pending or firing before the drill left out",
    )


def _numeric(job: str) -> tuple[int, str]:
    return (int(job), "") if job.isdigit() else (0, job)
