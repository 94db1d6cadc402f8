"""The churn report: built from the measurements and Slurm's jobs (pure), then written as
``churn.md`` (tables), ``churn.json`` (the raw numbers) and ``churn.png`` (the plot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab.churn import plot
from lab.churn.bound import BoundPoint, Tolerance, check
from lab.churn.cardinality import job_series, multiplier, unseen_jobs
from lab.churn.jobs import SlurmJob, running_timeline
from lab.churn.measurements import Context, Measurements, Report
from lab.churn.queries import queries
from lab.churn.series import ChurnRow, construct_rows, family_rows
from lab.churn.tables import hours, markdown, num
from lab.churn.window import iso
from lab.paths import atomic_write

__all__ = ["Context", "Report", "build", "document", "summary", "violation_message", "write"]


def build(measurements: Measurements, jobs: list[SlurmJob], context: Context, tolerance: Tolerance) -> Report:
    window = measurements.window
    times = window.times()
    bound = check(times, [set(step) for step in measurements.hpc_job], jobs, tolerance)
    labelled_series = [sum(step.values()) for step in measurements.hpc_job]
    seen = job_series(measurements.hpc_job, jobs)
    return Report(
        context,
        window,
        construct_rows(measurements.tally, window.duration_s, context.time_scale),
        family_rows(measurements.tally, window.duration_s, context.time_scale),
        bound,
        multiplier(
            labelled_series,
            measurements.labelled_gpus,
            measurements.max_series_on_one_gpu,
            measurements.families_per_gpu,
        ),
        seen,
        unseen_jobs((j.job_id for j in seen), jobs, *_scraped_span(measurements)),
        measurements,
        jobs,
    )


def _scraped_span(m: Measurements) -> tuple[float, float]:
    """From the first to the last evaluation with DCGM series: jobs outside it could not be seen."""
    active = m.tally.by_construct.get(m.dcgm_job, [])
    present = [i for i, count in enumerate(active) if count > 0]
    if not present:
        return m.window.end, m.window.end
    return m.window.time(present[0] + 1), m.window.time(present[-1] + 1)


def write(report: Report, out: Path) -> dict[str, Path]:
    """Write the three files (each to a temp name, renamed into place); returns them by kind.

    The PNG needs matplotlib; without it the report is written anyway and ``png`` is absent.
    """
    out.mkdir(parents=True, exist_ok=True)
    files = {"markdown": out / "churn.md", "json": out / "churn.json", "png": out / "churn.png"}
    m = report.measurements
    try:
        plot.render(
            files["png"],
            f"lab {report.context.lab}: {iso(report.window.start)} … {iso(report.window.end)}",
            report.window.times(),
            m.tally.by_construct,
            [sum(step.values()) for step in m.hpc_job],
            running_timeline(report.slurm_jobs, report.window.start, report.window.end),
            [p.allowed for p in report.bound.points],
            [p.distinct for p in report.bound.points],
            [p.t for p in report.bound.over],
        )
    except plot.PlotUnavailable:
        del files["png"]
    atomic_write(files["markdown"], markdown(report, plotted="png" in files), mode=0o644)
    atomic_write(files["json"], json.dumps(document(report), indent=1) + "\n", mode=0o644)
    return files


def summary(report: Report) -> list[str]:
    """The few lines printed on stdout."""
    b, c = report.bound, report.context
    lines = [
        f"lab {c.lab}: {iso(report.window.start)} … {iso(report.window.end)} "
        f"({hours(report.window.duration_s)} lab, {hours(report.window.duration_s * c.time_scale)} "
        f"real-time at time scale {c.time_scale:g}), step {report.window.step_s} s",
    ]
    for row in report.constructs:
        lines.append(
            f"  {row.construct}: peak {row.peak} series, mean {row.mean:.0f}; created {row.created} "
            f"({row.created_rate.lab_per_hour:.0f}/h lab, {row.created_rate.real_per_hour:.1f}/h real), "
            f"ended {row.ended}"
        )
    f = report.families_per_gpu
    lines.append(
        f"  hpc_job: F = {f} families per GPU, {len(report.jobs)} jobs seen, multiplier "
        f"{num(report.multiplier.mean, '.2f')} mean / {num(report.multiplier.peak, '.2f')} peak"
    )
    verdict = "holds" if b.holds else "VIOLATED"
    lines.append(
        f"  bound {verdict}: distinct hpc_job peak {b.peak_distinct}, GPU jobs running peak "
        f"{b.peak_running} (with lag {b.peak_allowed}); {len(b.over)} evaluations over, "
        f"{len(b.unknown)} with unknown ids"
    )
    return lines


def violation_message(report: Report) -> str:
    b = report.bound
    parts = []
    if b.over:
        first = b.over[0]
        parts.append(
            f"{len(b.over)} evaluation(s) show more distinct hpc_job values than GPU jobs that may "
            f"carry labels (first at {iso(first.t)}: {first.distinct} > {first.allowed})"
        )
    if b.unknown:
        first = b.unknown[0]
        parts.append(
            f"{len(b.unknown)} evaluation(s) show hpc_job values of no GPU job running then "
            f"(first at {iso(first.t)}: {', '.join(first.unknown[:5])})"
        )
    lag = b.tolerance.lag_s
    return (
        "the hpc_job bound is violated: "
        + "; ".join(parts)
        + f". Tolerance: {lag:g} s lag, {b.tolerance.read_s:g} s read. Look for mapping files the epilog "
        "did not clear (/var/lib/dcgm-exporter/job-mapping on the node, /var/log/slurm/dcgm-job-mapping.log)."
    )


def document(report: Report) -> dict[str, Any]:
    c, w, b, m, mult = report.context, report.window, report.bound, report.measurements, report.multiplier
    f = report.families_per_gpu
    return {
        "lab": c.lab,
        "command": c.command,
        "prometheus": c.prometheus_url,
        "sacct": c.sacct_command,
        "window": {
            "start": iso(w.start),
            "end": iso(w.end),
            "start_unix": w.start,
            "end_unix": w.end,
            "step_s": w.step_s,
            "steps": w.steps,
            "duration_s": w.duration_s,
        },
        "time_scale": {"value": c.time_scale, "source": c.time_scale_source},
        "scrape_interval_s": c.scrape_intervals,
        "constructs": [_row(r) for r in report.constructs],
        "families": [_row(r) for r in report.families],
        "bound": {
            "holds": b.holds,
            "tolerance": {
                "scrape_interval_s": b.tolerance.scrape_interval_s,
                "grace_s": b.tolerance.grace_s,
                "lag_s": b.tolerance.lag_s,
                "read_s": b.tolerance.read_s,
            },
            "evaluations": len(b.points),
            "peak_distinct": b.peak_distinct,
            "peak_running": b.peak_running,
            "peak_allowed": b.peak_allowed,
            "above_running": b.above_running,
            "over": [_point(p) for p in b.over],
            "unknown": [_point(p) for p in b.unknown],
        },
        "hpc_job": {
            "families_per_gpu": f,
            "nodes_by_gpus": {str(g): n for g, n in sorted(m.nodes_by_gpus.items())},
            "node_series_at_rest": list(m.node_series_at_rest) if m.node_series_at_rest else None,
            "multiplier": {
                "mean": mult.mean,
                "peak": mult.peak,
                "labelled_evaluations": mult.labelled_steps,
                "peak_jobs_on_one_gpu": mult.peak_jobs_on_one_gpu,
            },
            "jobs": [
                {
                    "job_id": j.job_id,
                    "gpus": j.gpus,
                    "series": j.series,
                    "expected": j.expected(f),
                    "seen_evaluations": j.seen_steps,
                }
                for j in report.jobs
            ],
            "unseen_jobs": [
                {"job_id": j.job_id, "gpus": j.gpus, "start": j.start, "end": j.end} for j in report.unseen
            ],
            "missed_jobs": [j.job_id for j in report.missed],
        },
        "scrape": {
            f"{job}/{kind}": {"sum": s[0], "count": s[1], "max": s[2]}
            for (job, kind), s in sorted(m.scrape_stats.items())
        },
        "tsdb_head": m.tsdb_head,
        "queries": m.queries,
        "promql": queries(m.dcgm_job, w.step_s, m.fresh_s, m.witness),
        "timeline": {
            "t": w.times(),
            "active": m.tally.by_construct,
            "distinct_hpc_job": [p.distinct for p in b.points],
            "running": [p.running for p in b.points],
            "allowed": [p.allowed for p in b.points],
            "labelled_series": [sum(step.values()) for step in m.hpc_job],
            "labelled_gpus": m.labelled_gpus,
        },
    }


def _row(r: ChurnRow) -> dict[str, Any]:
    return {
        "construct": r.construct,
        **({"family": r.family} if r.family else {}),
        "created": r.created,
        "ended": r.ended,
        "created_per_hour_lab": r.created_rate.lab_per_hour,
        "ended_per_hour_lab": r.ended_rate.lab_per_hour,
        "created_per_hour_real": r.created_rate.real_per_hour,
        "ended_per_hour_real": r.ended_rate.real_per_hour,
        "peak_active": r.peak,
        "mean_active": r.mean,
    }


def _point(p: BoundPoint) -> dict[str, Any]:
    return {
        "t": iso(p.t),
        "distinct": p.distinct,
        "running": p.running,
        "allowed": p.allowed,
        "unknown": list(p.unknown),
    }
