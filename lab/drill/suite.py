"""Runs drills against a running Slurm lab and writes their report.

Around every drill: a preflight (slurmctld answers, every target is up), then the drill, then the
checks every drill shares (:mod:`lab.drill.checks`): the alerts the drill's fault must cause were
delivered to the lab's receiver once and resolved after the restore, and no other alert began; every job
submitted meanwhile, by the drill and by the live workload, is in ``sacct`` with a terminal state once it
left the queue; and no target the drill did not break has a scrape gap over two intervals.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import docker

from lab import promql
from lab.alerts.listing import AlertsError
from lab.attach import fault_record
from lab.attach.running import RunningLab
from lab.attach.slurmrestd import RestError
from lab.drill import mapping, nodes, room, services
from lab.drill.checks import (
    Check,
    accounting_check,
    expected_alert_checks,
    nothing_else_check,
    scrape_gap_check,
)
from lab.drill.probe import DrillError, DrillTimeout, Probe
from lab.drill.record import Drill, Outcome, Record

# Cheapest first, so a broken lab fails fast; node-loss last: it waits out SlurmdTimeout.
_ORDER = ["restd-restart", "shim-restart", "prometheus-restart", "controller-restart", "burst"]
_ORDER += ["mapping-dir-faults", "xid-storm", "dbd-outage", "node-loss"]
DRILLS = {
    d.name: d
    for d in sorted([*services.DRILLS, *nodes.DRILLS, *mapping.DRILLS], key=lambda d: _ORDER.index(d.name))
}
GROUPS = {"all": list(DRILLS), "fast": [name for name, d in DRILLS.items() if d.fast]}
_ERRORS = (DrillError, promql.PrometheusError, RestError, AlertsError, docker.errors.DockerException, OSError)
# From the fault to the expected alert at the receiver: the rule's `for:` and Alertmanager's group_wait
# come on top of the drill's own steps, which already wait for the fault to show; from the restore to
# the resolved notification: a scrape and an evaluation (15 s each), then the group's next flush
# (group_interval 1m, the prometheus role's defaults).
DELIVERED_WITHIN_S = 150
RESOLVED_WITHIN_S = 180
FIRING = 'ALERTS{alertstate="firing"}'


def select(names: list[str]) -> list[Drill]:
    """The drills named (``all`` and ``fast`` are groups), in their run order, each once."""
    wanted: set[str] = set()
    for name in names:
        if name in GROUPS:
            wanted.update(GROUPS[name])
        elif name in DRILLS:
            wanted.add(name)
        else:
            known = ", ".join([*GROUPS, *DRILLS])
            raise DrillError(f"no drill {name!r}. Fix: name one of {known} (`lab drill --list`).")
    return [drill for name, drill in DRILLS.items() if name in wanted]


def run_drill(lab: RunningLab, drill: Drill, say: Callable[[str], None]) -> Outcome:
    probe = Probe(lab, say)
    record = Record()
    probe.mark_workload_log()
    began = time.monotonic()
    try:
        _preflight(probe)
        standing = _alert_labels(probe, "ALERTS")  # pending or firing before the drill
    except _ERRORS as problem:
        return Outcome(drill, [], None, time.monotonic() - began, f"before the drill: {problem}")
    error = ""
    began_wall = time.time()  # the window opens on a settled lab
    try:
        with room.reserved(probe, drill.name, drill.room) as made:
            if made is not None:
                record.notes.append(made.note)
            error = _run_and_check(probe, record, drill, began_wall, standing)
    except _ERRORS as problem:  # no room, or the reservation could not be deleted after the drill
        error = error or str(problem)
    return Outcome(
        drill,
        record.checks,
        record.recover_s,
        time.monotonic() - began,
        error,
        tuple(record.notes),
        tuple(record.alert_times),
    )


def _run_and_check(
    probe: Probe, record: Record, drill: Drill, began_wall: float, standing: list[dict[str, str]]
) -> str:
    """The drill, then the checks every drill shares; what went wrong, or ""."""
    error = ""
    with fault_record.fault(probe.lab.name, f"drill:{drill.name}", "lab", "lab drill", drill.breaks) as fault:
        try:
            drill.run(probe, record)
        except _ERRORS as problem:
            error = str(problem)
            _cancel_own_jobs(probe)
        try:
            fault.settled = _scraped_again(probe, record, time.time())
            record.checks += _alerts(probe, record, began_wall, standing)
            record.checks += _nothing_lost(probe, record, began_wall, time.time())
        except _ERRORS as problem:
            error = error or f"after the drill: {problem}"
    return error


def _alert_labels(probe: Probe, expression: str) -> list[dict[str, str]]:
    """The label sets of the alerts ``expression`` finds in Prometheus, without ``alertstate``."""
    series = probe.query(expression)
    return [{k: v for k, v in s.labels.items() if k not in ("alertstate", "__name__")} for s in series]


def _alerts(probe: Probe, record: Record, began_wall: float, standing: list[dict[str, str]]) -> list[Check]:
    """Wait for each expected alert's firing and resolved notifications at the receiver, then check
    them and that nothing else began (:func:`lab.drill.checks.expected_alert_checks`)."""
    for want in record.expected:  # a wait that times out leaves its check to fail with what was received
        with suppress(DrillTimeout):
            firing = partial(probe.delivered, want.alert, want.labels, "firing", began_wall)
            probe.until(firing, DELIVERED_WITHIN_S, f"{want.alert} delivered")
        if record.restored_at is not None:
            with suppress(DrillTimeout):
                resolved = partial(probe.delivered, want.alert, want.labels, "resolved", record.restored_at)
                probe.until(resolved, RESOLVED_WITHIN_S, f"{want.alert} resolved")
    window = max(1, round(time.time() - began_wall))
    in_window = _alert_labels(probe, f"max_over_time({FIRING}[{window}s])")
    got = probe.received(began_wall)
    checks, record.alert_times = expected_alert_checks(record.expected, record.restored_at, got)
    checks.append(nothing_else_check(record.expected, got, began_wall, in_window, standing))
    return checks


def _cancel_own_jobs(probe: Probe) -> None:
    """A drill that failed leaves none of its jobs queued for the next one (they end CANCELLED)."""
    try:
        left = sorted(set(probe.submitted) & probe.queued())
        if left:
            probe.slurm(f"scancel {' '.join(left)}")
    except _ERRORS as problem:
        probe.say(f"could not cancel the drill's jobs: {problem}")


def _scraped_again(probe: Probe, record: Record, since: float) -> bool:
    """Wait until every target was scraped after ``since`` (unless Prometheus itself was broken):
    then Prometheus shows the lab as it is after the drill."""
    if "*" in record.broken:
        return False
    interval = probe.scrape_interval_s()
    probe.until(lambda: probe.all_scraped_since(since), 3 * interval, "every target scraped again")
    return True


def _scrape_interval(probe: Probe) -> float | None:
    try:
        return probe.scrape_interval_s()
    except DrillError:
        return None


def _preflight(probe: Probe) -> None:
    """The lab answers, no fault of the fault record is still in and the last one has settled (so
    the gap check sees only this drill), and every target is up."""
    lab = probe.lab.name
    still_in = fault_record.active(lab)
    if still_in:
        faults = ", ".join(f"{e.kind} {e.target} (by {e.by})" for e in still_in)
        raise DrillError(f"fault(s) still in on lab '{lab}': {faults}. Fix: clear them, then drill.")
    probe.until(probe.controller_answers, 60, "slurmctld answering before the drill")
    probe.until(probe.prometheus_ready, 60, "Prometheus answering before the drill")
    probe.until(
        lambda: not probe.query("up == 0 or time() - timestamp(up) > 60"),
        90,
        "every target up before the drill",
    )
    # Polled: a Prometheus that a drill restarted has no targets for a moment (and `up` none to check).
    interval = probe.until(lambda: _scrape_interval(probe), 60, "Prometheus' targets before the drill")
    settled = fault_record.settled_since(lab, 2 * interval)
    probe.until(lambda: time.time() >= settled, max(0.0, settled - time.time()) + 5, "the last fault settled")


def _nothing_lost(probe: Probe, record: Record, start: float, end: float) -> list[Check]:
    """The shared checks: accounting, and (unless Prometheus itself was broken) scrape gaps."""
    own = probe.submitted
    try:
        probe.until(lambda: not set(own) & probe.queued(), 180, "the drill's own jobs ended")
    except DrillError as timeout:
        probe.say(str(timeout))
    submitted = own + probe.workload_submissions()
    checks = [accounting_check(submitted, probe.job_states(submitted), probe.queued())]
    if "*" not in record.broken:
        interval = probe.scrape_interval_s()
        # Read from two intervals before the start: a drill shorter than an interval may hold no
        # scrape at all, and every target must still be seen to be judged.
        samples = probe.up_samples(start - 2 * interval, end)
        checks.append(scrape_gap_check(samples, interval, start, end, record.broken))
    return checks


# --- the report ---


def report_lines(outcome: Outcome) -> list[str]:
    verdict = "PASS" if outcome.passed else "FAIL"
    recover = f"{outcome.recover_s:.1f} s" if outcome.recover_s is not None else "–"
    lines = [f"{verdict}  {outcome.drill.name}: recovered in {recover}, drill took {outcome.seconds:.0f} s"]
    lines += [
        f"      {'ok  ' if c.passed else 'FAIL'} {c.name}{f' ({c.detail})' if c.detail else ''}"
        for c in outcome.checks
    ]
    lines += [f"      note: {note}" for note in outcome.notes]
    if outcome.error:
        lines.append(f"      error: {outcome.error}")
    return lines


def markdown(outcomes: list[Outcome], machine: str) -> str:
    """The RELIABILITY.md table of one run."""
    rows = [
        f"Run of {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine}.",
        "",
        "| drill | what was broken | alerts it must cause | what was checked | result | time to recover |",
        "|---|---|---|---|---|---|",
    ]
    for outcome in outcomes:
        checked = "; ".join(
            f"{c.name}{'' if c.passed else ' **(failed: ' + c.detail + ')**'}" for c in outcome.checks
        )
        if outcome.error:
            checked += f"; **error: {outcome.error}**"
        recover = f"{outcome.recover_s:.1f} s" if outcome.recover_s is not None else "–"
        rows.append(
            f"| `{outcome.drill.name}` | {outcome.drill.breaks} | {outcome.drill.alerts} | {checked} | "
            f"{'pass' if outcome.passed else '**fail**'} | {recover} |"
        )
    return "\n".join(rows) + "\n"


def write_report(outcomes: list[Outcome], directory: Path, machine: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "drills.md").write_text(markdown(outcomes, machine), encoding="utf-8")
    raw = [
        {
            "drill": o.drill.name,
            "breaks": o.drill.breaks,
            "passed": o.passed,
            "recover_s": o.recover_s,
            "seconds": round(o.seconds, 1),
            "error": o.error,
            "notes": list(o.notes),
            "alerts": list(o.alert_times),
            "checks": [{"name": c.name, "passed": c.passed, "detail": c.detail} for c in o.checks],
        }
        for o in outcomes
    ]
    (directory / "drills.json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return directory
