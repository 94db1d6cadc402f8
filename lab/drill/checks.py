"""What every drill checks afterwards, as pure functions of what the lab answered.

* **Nothing lost in accounting**: every job submitted during the drill is in ``sacct``; every one
  that is no longer in the queue has a terminal state there.
* **No scrape gap**: for every target that was not the one broken, successive successful scrapes
  (``up == 1``, read as raw samples from ``up[<window>]``) are never further apart than two scrape
  intervals, counting from the window's start to its end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

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


def _numeric(job: str) -> tuple[int, str]:
    return (int(job), "") if job.isdigit() else (0, job)
