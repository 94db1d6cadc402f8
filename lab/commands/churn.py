"""`lab churn`: the churn and cardinality report of a lab's Prometheus.

Also runnable alone: ``python -c "from lab.commands.churn import app; app()" --help``.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import docker
import typer
from docker.models.containers import Container

from lab import kinds
from lab.attach import fault_record, running
from lab.blueprint import slurm_blueprint as blueprint_module
from lab.bringup import engine
from lab.churn import report as report_module
from lab.churn.bound import EPILOG_GRACE_S, Tolerance
from lab.churn.jobs import SacctError, parse_sacct
from lab.churn.queries import ChurnError, collect, sacct_from_lab, scrape_intervals
from lab.churn.window import Window, bounds, iso, step_seconds
from lab.commands.options import fail
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.promql import PrometheusError

app = typer.Typer(
    help=(
        "Churn and cardinality report of the lab's Prometheus, with the hpc_job bound check.\n\n"
        "Series created and ended per hour by family and construct (scrape job), in lab time and as "
        "real-time equivalents (--time-scale); peak and mean active series; series per job and the "
        "hpc_job multiplier; and the bound: distinct hpc_job values at every evaluation ≤ GPU jobs "
        "running then by Slurm's accounting, allowing for the scrape lag.\n\n"
        "Writes churn.md (tables), churn.json (raw numbers) and churn.png (series over time with running "
        "jobs) and prints a summary. Exit 1 when the bound is violated or the report cannot be made."
    ),
    add_completion=False,
    pretty_exceptions_enable=False,
    subcommand_metavar="",
)

_ERRORS = (
    ChurnError,
    SacctError,
    running.LabError,
    engine.PrerequisiteError,
    blueprint_module.BlueprintError,
    docker.errors.DockerException,
    OSError,
)


@app.callback(invoke_without_command=True)
def churn(
    lab: Annotated[
        str | None, typer.Option(help="Lab name (the blueprint's `name`); default: the only lab that is up.")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Window ending now: 90s, 15m, 1h, 1d … (default 1h).")
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(help="Window start: 2026-11-30T10:00:00Z or Unix seconds (UTC if no offset)."),
    ] = None,
    end: Annotated[str | None, typer.Option(help="Window end (default: now); with --start.")] = None,
    step: Annotated[
        str | None,
        typer.Option(help="Evaluation step, whole seconds (default: the shortest scrape interval)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Directory for churn.md, churn.json, churn.png; default .lab/LAB/churn/TIME."),
    ] = None,
    time_scale: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            help="Real seconds per lab second of the workload that ran (default: the blueprint's "
            "workload.time_scale, else 1). Per-hour figures are also given as real-time equivalents.",
        ),
    ] = None,
    grace: Annotated[
        float,
        typer.Option(min=0, help="Seconds the epilog may take after End before hpc_job must be gone."),
    ] = EPILOG_GRACE_S,
    dcgm_job: Annotated[str, typer.Option(help="Scrape job of the DCGM exporters.")] = "dcgm",
    prometheus: Annotated[
        str | None,
        typer.Option(help="Prometheus base URL (default: the lab's, 127.0.0.1:<ports.prometheus>)."),
    ] = None,
    sacct: Annotated[
        Path | None,
        typer.Option(
            help="sacct output to use instead of asking the lab's controller, made with "
            "`SLURM_TIME_FORMAT=%s sacct -X -n -P -a -D -S … -E … -o JobIDRaw,Start,End,State,AllocTRES`."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """The report over one window (see `lab churn --help`)."""
    progress = Progress(quiet=quiet)
    try:
        first, last = bounds(since, start, end, now=float(math.floor(time.time())))
        name, url, controller, scale, scale_source = _lab(lab, prometheus, sacct, time_scale)
        intervals = scrape_intervals(url)
        step_s = step_seconds(step, intervals)
        window = Window.between(first, last, step_s)
        interval = intervals.get(dcgm_job)
        if interval is None:
            progress.say(f"warning: Prometheus has no active {dcgm_job!r} target; the lag assumes {step_s} s")
        elif step_s > interval:
            progress.say(
                f"warning: step {step_s} s > {dcgm_job} scrape interval {interval:g} s: "
                "series shorter than a step are missed"
            )
        tolerance = Tolerance(interval or step_s, grace)
        measurements = collect(url, window, dcgm_job, tolerance.scrape_interval_s, progress.say)
        if not measurements.tally.peak:
            raise ChurnError(
                f"Prometheus at {url} has no series between {iso(window.start)} and {iso(window.end)}. "
                "Fix: pick a window when the lab was up (--since, --start/--end)."
            )
        if sacct is not None:
            text, sacct_command = sacct.read_text(encoding="utf-8"), f"sacct output in {sacct}"
        else:
            assert controller is not None
            text, sacct_command = sacct_from_lab(controller, window, tolerance.lag_s)
        jobs = parse_sacct(text)
        context = report_module.Context(
            name,
            url,
            _command(name, window, scale, grace, dcgm_job),
            sacct_command,
            scale,
            scale_source,
            intervals,
        )
        made = report_module.build(measurements, jobs, context, tolerance)
        target = out or lab_state_dir(name) / "churn" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        files = report_module.write(made, target)
    except PrometheusError as error:
        fail(f"Prometheus: {error}\nFix: check the lab is up (`lab status`), or pass --prometheus URL.")
    except (*_ERRORS, ValueError) as error:
        fail(error)
    for line in report_module.summary(made):
        typer.echo(line)
    if "png" not in files:
        progress.say("warning: no PNG: matplotlib is missing. Fix: pip install 'matplotlib>=3.8,<4'")
    typer.echo(f"wrote {target}/ ({', '.join(path.name for path in files.values())})")
    if not made.bound.holds:
        fail(report_module.violation_message(made) + _faults_in(name, made.window))


def _faults_in(lab: str, window: Window) -> str:
    """The lab's recorded faults that reach into the window: a broken bound may be one of them."""
    settle_s = 2 * window.step_s
    faults = fault_record.within(lab, window.start, window.end, settle_s)
    named = [f"{e.kind} {e.target} at {iso(e.at)} (by {e.by})" for e in faults]
    return f"\nFaults recorded in the window (lab fault record): {'; '.join(named)}" if named else ""


def _lab(
    lab: str | None, prometheus: str | None, sacct: Path | None, time_scale: float | None
) -> tuple[str, str, Container | None, float, str]:
    """(lab name, Prometheus URL, controller or None, time scale, where the time scale came from)."""
    if prometheus is not None and sacct is not None:
        scale = time_scale if time_scale is not None else 1.0
        return (
            lab or "external",
            prometheus.rstrip("/"),
            None,
            scale,
            "--time-scale" if time_scale else "default",
        )
    handle = kinds.attach(engine.require_engine(), lab)
    name, model = handle.name, handle.blueprint
    controller = handle.controller() if sacct is None else None
    url = prometheus.rstrip("/") if prometheus else handle.prometheus_url
    if time_scale is not None:
        return name, url, controller, time_scale, "--time-scale"
    if isinstance(model, blueprint_module.Blueprint) and model.workload is not None:
        return name, url, controller, model.workload.time_scale, "the blueprint's workload.time_scale"
    return name, url, controller, 1.0, "default: the blueprint has no workload"


def _command(lab: str, window: Window, scale: float, grace: float, dcgm_job: str) -> str:
    """The command that repeats this report exactly (the window made explicit)."""
    parts = [
        f"lab churn --lab {lab}",
        f"--start {iso(window.start)} --end {iso(window.end)} --step {window.step_s}s",
        f"--time-scale {scale:g}",
    ]
    if grace != EPILOG_GRACE_S:
        parts.append(f"--grace {grace:g}")
    if dcgm_job != "dcgm":
        parts.append(f"--dcgm-job {dcgm_job}")
    return " ".join(parts)
