"""The markdown of a churn report (pure): a header, the bound, the tables, the notes."""

from __future__ import annotations

import statistics

from lab.churn.bound import BoundPoint, BoundResult
from lab.churn.measurements import Context, Measurements, Report
from lab.churn.series import ChurnRow
from lab.churn.window import iso

LISTED = 20  # violations and mismatches listed by name here; all of them are in churn.json


def markdown(report: Report, plotted: bool = True) -> str:
    c, w, b, m = report.context, report.window, report.bound, report.measurements
    f = report.families_per_gpu
    intervals = ", ".join(f"{job} {s:g} s" for job, s in sorted(c.scrape_intervals.items())) or "unknown"
    lines = [
        f"# Churn report: lab `{c.lab}`",
        "",
        f"Made by `{c.command}` from {c.prometheus_url}; Slurm jobs from `{c.sacct_command}`.",
        "",
        "| | |",
        "|---|---|",
        f"| window | {iso(w.start)} … {iso(w.end)} ({hours(w.duration_s)} of lab time) |",
        f"| time scale | {c.time_scale:g} real s per lab s ({c.time_scale_source}): the window stands for "
        f"{hours(w.duration_s * c.time_scale)} of real time |",
        f"| evaluations | {w.steps} every {w.step_s} s; an event at t happened in (t − step, t] |",
        f"| scrape interval | {intervals} |",
        f"| bound tolerance | lag {b.tolerance.lag_s:g} s (scrape interval "
        f"{b.tolerance.scrape_interval_s:g} s + epilog grace {b.tolerance.grace_s:g} s), "
        f"read {b.tolerance.read_s:g} s |",
        f"| Prometheus restarts | {_restarts(m)} |",
        "",
    ]
    if plotted:
        lines += ["![active series, GPU jobs and distinct hpc_job over time](churn.png)", ""]
    lines += _bound_section(b, m)
    lines += [
        "## Series by construct",
        "",
        "Created: present at an evaluation, absent at the one before; ended: the reverse. Real-time "
        "rates divide the lab rates by the time scale (they apply to job-driven churn; scrape "
        "failures do not speed up with the workload).",
        "",
        *_churn_table(report.constructs, with_family=False),
        "",
    ]
    lines += _hpc_section(report, f)
    lines += _scrape_section(m, c)
    lines += _tsdb_section(m)
    lines += [
        "## Series by family and construct",
        "",
        *_churn_table(report.families, with_family=True),
        "",
    ]
    return "\n".join(lines)


def _restarts(m: Measurements) -> str:
    restarts = m.tsdb_head.get("restarts")
    if restarts is None:
        return "unknown (Prometheus does not scrape itself)"
    if restarts == 0:
        return "none in the window"
    return (
        f"{restarts:.0f} in the window: series that vanished while it was down have no staleness "
        "marker and stay in query results for the lookback (5 min by default), in the active and churn "
        "counts too; the bound counts only each target's latest scrape"
    )


def _bound_section(b: BoundResult, m: Measurements) -> list[str]:
    lines = [
        f"## Bound: distinct `hpc_job` ≤ GPU jobs running — {'holds' if b.holds else '**VIOLATED**'}",
        "",
        "Distinct values at t: the `hpc_job` values in each target's latest scrape (a GPU's copies "
        f"count while its `{m.witness}` sample with that id is at most {m.fresh_s} s old). A job may "
        "carry labels at t when Start − read ≤ t < End + 1 s + lag (sacct times are whole seconds; a "
        "scrape shows files read up to one interval before t; the epilog clears them after End).",
        "",
        "| evaluations | peak distinct `hpc_job` | peak GPU jobs running | peak bound (jobs within the "
        "lag) | evaluations above running (lag absorbed) | over the bound | with unknown ids |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(b.points)} | {b.peak_distinct} | {b.peak_running} | {b.peak_allowed} | {b.above_running} "
        f"| {len(b.over)} | {len(b.unknown)} |",
        "",
    ]
    bad = sorted({*b.over, *b.unknown}, key=lambda p: p.t)
    if bad:
        lines += [
            "| time | distinct | running | with lag | unknown ids |",
            "|---|---:|---:|---:|---|",
            *[_point_row(p) for p in bad[:LISTED]],
            *([f"| … {len(bad) - LISTED} more in churn.json | | | | |"] if len(bad) > LISTED else []),
            "",
        ]
    return lines


def _point_row(p: BoundPoint) -> str:
    return f"| {iso(p.t)} | {p.distinct} | {p.running} | {p.allowed} | {', '.join(p.unknown) or '–'} |"


def _hpc_section(report: Report, f: int) -> list[str]:
    m, mult = report.measurements, report.multiplier
    shapes = ", ".join(f"{nodes} × {gpus} GPUs" for gpus, nodes in sorted(m.nodes_by_gpus.items())) or "none"
    rest = m.node_series_at_rest
    rest_text = (
        "none seen" if rest is None else (f"{rest[0]}" if rest[0] == rest[1] else f"{rest[0]}–{rest[1]}")
    )
    if rest is not None and rest[0] == rest[1] and len(m.nodes_by_gpus) == 1:
        gpus = next(iter(m.nodes_by_gpus))
        rest_text += f" = {f} × {gpus} GPU series + {rest[0] - f * gpus} series Prometheus adds per target"
    per_job = [j.series for j in report.jobs]
    matched = [j for j in report.jobs if j.expected(f) is not None and j.series == j.expected(f)]
    lines = [
        f"## `hpc_job` and cardinality (construct `{m.dcgm_job}`)",
        "",
        "| | |",
        "|---|---|",
        f"| families per GPU (F) | {f} |",
        f"| nodes | {shapes} |",
        f"| series per node at rest (no job, scrape up) | {rest_text} |",
        f"| jobs seen with `hpc_job` | {len(report.jobs)}; series per job {_spread(per_job)} |",
        f"| jobs with exactly F × GPUs series | {len(matched)} of {len(report.jobs)} |",
        f"| GPU jobs never seen while DCGM was scraped | {len(report.unseen)}, of which "
        f"{len(report.missed)} ran ≥ one scrape interval + 2 s |",
        f"| multiplier (labelled series / F × labelled GPUs) | mean {num(mult.mean, '.3f')}, "
        f"peak {num(mult.peak, '.3f')} over {mult.labelled_steps} evaluations with labels |",
        f"| most jobs on one GPU | {num(mult.peak_jobs_on_one_gpu, '.0f')} |",
        "",
        "A job on g GPUs adds F·g series with its id and, on GPUs it does not share, ends the F·g "
        "unlabelled ones: 2·F·g turned over at start and again at the end.",
        "",
    ]
    mismatched = report.mismatched_jobs
    if mismatched:
        lines += [
            "| job | GPUs (sacct) | series seen | F × GPUs |",
            "|---|---:|---:|---:|",
            *[f"| {j.job_id} | {j.gpus} | {j.series} | {j.expected(f)} |" for j in mismatched[:LISTED]],
            "",
        ]
    return lines


def _scrape_section(m: Measurements, c: Context) -> list[str]:
    constructs = sorted({job for job, _ in m.scrape_stats})
    rows = []
    for job in constructs:
        up = _stat_mean(m, job, "up")
        mean = _stat_mean(m, job, "duration")
        top = m.scrape_stats.get((job, "duration_max"))
        interval = c.scrape_intervals.get(job)
        rows.append(
            f"| {job} | {num(interval, 'g')} s | {num(up, '.4f')} | {num(mean, '.3f')} s | "
            f"{num(top[2] if top else None, '.3f')} s |"
        )
    return [
        "## Scrape health",
        "",
        "| construct | interval | `up` (mean) | scrape duration (mean) | scrape duration (max) |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        "A failed scrape ends every series of its target and the next good one creates them again, so "
        "`up` below 1 shows up as churn above.",
        "",
    ]


def _tsdb_section(m: Measurements) -> list[str]:
    head = m.tsdb_head
    return [
        "## Prometheus TSDB head (a different count)",
        "",
        f"`increase(prometheus_tsdb_head_series_created_total)` over the window: "
        f"{num(head.get('created'), '.0f')}; `…_removed_total`: {num(head.get('removed'), '.0f')}. "
        "These count series entering the in-memory head (every construct, Prometheus' own included) "
        "and leaving it at head garbage collection after compaction (every 2 h). A series that ends "
        "and returns within the head's span is created once there but twice in the table above, and "
        "removal lags the end by up to hours; `increase()` also extrapolates to the window's edges.",
        "",
    ]


def _churn_table(rows: list[ChurnRow], with_family: bool) -> list[str]:
    head = "| construct | family |" if with_family else "| construct |"
    rule = "|---|---|" if with_family else "|---|"
    out = [
        f"{head} created | ended | created/h (lab) | ended/h (lab) | created/h (real-time eq.) | "
        "ended/h (real-time eq.) | peak active | mean active |",
        f"{rule}---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        name = f"| {r.construct} | `{r.family}` |" if with_family else f"| {r.construct} |"
        created, ended = r.created_rate, r.ended_rate
        out.append(
            f"{name} {r.created} | {r.ended} | {created.lab_per_hour:.1f} | {ended.lab_per_hour:.1f} | "
            f"{created.real_per_hour:.2f} | {ended.real_per_hour:.2f} | {r.peak} | {r.mean:.1f} |"
        )
    return out


def _stat_mean(m: Measurements, job: str, kind: str) -> float | None:
    stat = m.scrape_stats.get((job, kind))
    return stat[0] / stat[1] if stat and stat[1] else None


def _spread(values: list[int]) -> str:
    if not values:
        return "–"
    return f"min {min(values)}, median {statistics.median(values):g}, max {max(values)}"


def num(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"
