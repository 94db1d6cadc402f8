"""`lab workload plan` and `lab workload run`. Thin: each parses its flags and calls one module."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import docker
import typer

from lab import kinds
from lab.attach import running
from lab.attach.running import RunningLab
from lab.attach.slurmrestd import RestError
from lab.blueprint import slurm_blueprint as blueprint_module
from lab.blueprint.slurm_blueprint import BlueprintError
from lab.bringup import engine
from lab.commands.options import fail
from lab.paths import DEFAULT_BLUEPRINT
from lab.progress import Progress
from lab.workload import background, pyslurm_wheel
from lab.workload.plan import Model, Plan, PlannedJob, check_against, lab_limit_minutes, plan, week_offset_now
from lab.workload.pyslurm_wheel import PyslurmError
from lab.workload.runner import RunOptions, Submitter, run
from lab.workload.stats import describe
from lab.workload.submit import NodeShape, SubmitError
from lab.workload.submitters import DEFAULT, connect, resolve
from lab.workload.summary import duration

app = typer.Typer(
    help=(
        "The plausible workload: jobs drawn from published GPU-cluster traces (arrival rate, sizes, "
        "run times, outcomes; see docs/workload.md), planned without a cluster and submitted to the "
        "lab as the planned users, through pyslurm (built once from its pinned tag) or slurmrestd."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

BlueprintOption = Annotated[
    Path, typer.Option("--blueprint", "-b", help="Blueprint YAML with a workload section.")
]
HoursOption = Annotated[float, typer.Option(min=0.01, help="Real hours of submissions to plan.")]
SeedOption = Annotated[int | None, typer.Option(help="Plan seed (default: the blueprint's workload.seed).")]
ScaleOption = Annotated[
    float | None,
    typer.Option(min=1, help="Real seconds per lab second (default: the blueprint's workload.time_scale)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
SubmitViaOption = Annotated[
    str,
    typer.Option(
        help="pyslurm (pyslurm's tag built once and run in the controller as each user), slurmrestd "
        "(Slurm's REST API with each user's JWT), or auto (the default): pyslurm where it has a release "
        "for the lab's Slurm (24.11), slurmrestd otherwise (26.05)."
    ),
]
PyslurmSourceOption = Annotated[
    Path | None,
    typer.Option(
        help="pyslurm's tag archive to build from (default: $LAB_PYSLURM_SOURCE, else "
        "../shared/vendor/pyslurm-24.11.0.tar.gz); its sha256 must match lab/versions.py."
    ),
]


def _model(path: Path, time_scale: float | None) -> Model:
    try:
        loaded = blueprint_module.load(path)
        spec = check_against(loaded, str(path))
    except blueprint_module.BlueprintError as error:
        fail(error)
    if time_scale is not None:
        spec = spec.model_copy(update={"time_scale": time_scale})
    return Model(loaded, spec)


@app.command("plan")
def plan_command(
    blueprint: BlueprintOption = DEFAULT_BLUEPRINT,
    hours: HoursOption = 24.0,
    seed: SeedOption = None,
    time_scale: ScaleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the jobs a cluster of the blueprint's size would see, with their statistics. No cluster needed.

    Times are real time from Monday 00:00; the lab column divides them by the time scale.
    """
    model = _model(blueprint, time_scale)
    planned = plan(model.blueprint, hours, seed, model.spec)
    statistics = describe(planned, model)
    if as_json:
        document = {
            "blueprint": str(blueprint),
            "lab": planned.blueprint,
            "seed": planned.seed,
            "time_scale": planned.time_scale,
            "statistics": statistics,
            "jobs": [_job_json(job, planned.time_scale) for job in planned.jobs],
        }
        typer.echo(json.dumps(document, indent=1))
        return
    typer.echo(_plan_text(planned, statistics))


@app.command("run")
def run_command(
    blueprint: BlueprintOption = DEFAULT_BLUEPRINT,
    hours: HoursOption = 24.0,
    seed: SeedOption = None,
    time_scale: ScaleOption = None,
    live_mode: Annotated[
        bool, typer.Option("--live", help="Submit endlessly (the lab's live mode) until Ctrl-C or SIGTERM.")
    ] = False,
    job_classes: Annotated[
        Path | None,
        typer.Option(
            help="JSON job id → class for the DCGM shim (default: .lab/<lab>/shared/jobs/classes.json)."
        ),
    ] = None,
    output_dir: Annotated[
        str, typer.Option(help="Directory on the nodes for workload-<job id>.out.")
    ] = "/tmp",
    drain: Annotated[
        bool, typer.Option(help="After the last submission, wait until every job ended.")
    ] = True,
    submit_via: SubmitViaOption = DEFAULT,
    pyslurm_source: PyslurmSourceOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Submit the plan to the running lab (pyslurm or slurmrestd), then summarise from Slurm's accounting.

    Each job runs as its planned user, logs lines with its job id, and ends as planned: completed,
    failed (with a traceback), cancelled (through Slurm's cancel) or timeout (its time limit).
    """
    model = _model(blueprint, time_scale)
    try:
        submit_via = resolve(submit_via, model.blueprint.slurm.release)
    except (ValueError, PyslurmError) as error:
        fail(error)
    spec = model.spec
    chosen_seed = spec.seed if seed is None else seed
    lab = model.blueprint.name
    progress = Progress(quiet=quiet)
    stop = threading.Event()
    jobs: Any
    if live_mode:
        jobs, planned_count = model.jobs(chosen_seed, week_offset_now(time.time())), None
    else:
        planned_plan: Plan = plan(model.blueprint, hours, chosen_seed, spec)
        jobs, planned_count = planned_plan.jobs, len(planned_plan.jobs)
        lab_time = duration(hours * 3600 / spec.time_scale)
        progress.say(
            f"{planned_count} jobs planned over {hours:g} h real = {lab_time} in the lab "
            f"(time scale {spec.time_scale:g})"
        )

    def on_signal(_number: int, _frame: FrameType | None) -> None:
        progress.say("stopping: no more submissions; planned cancellations are cancelled now")
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        handle = kinds.attach(engine.require_engine(), lab)
        client = _connect_live(handle, submit_via, progress, pyslurm_source) if live_mode else None
        client = client or connect(handle, submit_via, progress, pyslurm_source)
        progress.say(f"submitting through {client.path}")
        try:
            summary = run(
                jobs,
                client,
                time_scale=spec.time_scale,
                shape=NodeShape.of(model.blueprint),
                seed=chosen_seed,
                planned=planned_count,
                stop=stop,
                job_classes=job_classes or handle.job_classes_path,
                options=RunOptions(
                    output_dir=output_dir,
                    drain=drain and not live_mode,
                    # Live, the log is a record kept for days: a line per job, and a status line an hour.
                    progress_every_s=3600.0 if live_mode else RunOptions.progress_every_s,
                ),
                progress=progress.say,
                trace_queue=(spec.trace.queue_s.median, spec.trace.queue_s.mean),
            )
        finally:
            client.close()
    except (
        SubmitError,
        PyslurmError,
        RestError,
        running.LabError,
        BlueprintError,
        engine.PrerequisiteError,
        docker.errors.DockerException,
    ) as error:
        fail(error)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    typer.echo(json.dumps(summary.as_dict(), indent=1) if as_json else summary.text())


def _job_json(job: PlannedJob, time_scale: float) -> dict[str, Any]:
    data = job.as_dict()
    data["submit_lab_s"] = round(job.submit_s / time_scale, 3)
    data["time_limit_lab_min"] = lab_limit_minutes(job.time_limit_s, time_scale)
    return data


def _clock(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    return f"{'d' + str(days) + ' ' if days else ''}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


def _plan_text(planned: Plan, statistics: dict[str, Any]) -> str:
    scale = planned.time_scale
    lines = [
        f"plan for lab '{planned.blueprint}': {planned.gpus_in_service} of {planned.total_gpus} GPUs in "
        f"service, {planned.hours:g} h real from Monday 00:00 = {duration(planned.hours * 3600 / scale)} "
        f"in the lab (time scale {scale:g}), seed {planned.seed}: {len(planned.jobs)} jobs, "
        f"{statistics['running_at_start']} of them running when it begins",
        f"{'#':>5} {'submit real':>12} {'lab':>12}  {'class':<11} {'user/account':<22} {'partition':<11} "
        f"{'qos':<6} {'GPUs':>4} {'nodes':>5} {'runs':>8} {'limit':>8}  outcome",
    ]
    for job in planned.jobs:
        outcome = job.outcome + (f" ({job.failure})" if job.failure else "")
        lines.append(
            f"{job.index:>5} {_clock(job.submit_s):>12} {_clock(job.submit_s / scale):>12}  "
            f"{job.workload_class:<11} {job.user + '/' + job.account:<22} {job.partition:<11} {job.qos:<6} "
            f"{job.gpus:>4} {job.nodes:>5} {duration(job.duration_s):>8} {duration(job.time_limit_s):>8}  "
            f"{outcome}"
        )
    lines += ["", f"statistics: realised | {statistics['trace']} (trace figure or lab assumption)"]
    if scale != 1:
        lines.append(
            f"  time       compressed {scale:g}×: each lab second stands for {scale:g} real seconds; every "
            "figure here is in real time"
        )
    lines += _statistics_lines(statistics)
    return "\n".join(lines)


def _statistics_lines(stats: dict[str, Any]) -> list[str]:
    def pair(entry: dict[str, float | None], unit: str = "", digits: int = 2) -> str:
        realised = entry["realised"]
        shown = "n/a" if realised is None else f"{realised:.{digits}f}"
        return f"{shown} | {entry['configured']:.{digits}f}{unit}"

    def percent(entry: dict[str, float]) -> str:
        return f"{entry['realised'] * 100:.1f} % | {entry['configured'] * 100:.1f} %"

    def shares(entries: dict[str, dict[str, float]]) -> str:
        return ", ".join(f"{name} {percent(entry)}" for name, entry in entries.items())

    arrivals = stats["arrivals"]
    lines = [
        f"  arrivals   {pair(arrivals['gpu_jobs_per_gpu_per_day'])} GPU jobs per GPU in service per day "
        f"({pair(arrivals['jobs_per_day'], ' jobs/day', 1)})",
        f"             busiest/quietest hour {pair(arrivals['busiest_to_quietest_hour'])}, "
        f"weekend/weekday {pair(arrivals['weekend_to_weekday'])}",
        f"  allocated  {percent(stats['allocated_share'])} of the GPUs in service (the plan's jobs as if "
        "none waited; Slurm's queue can only lower it)",
    ]
    if "sizes" not in stats:
        return lines
    sizes, runs, outcomes, cap = stats["sizes"], stats["durations"], stats["outcomes"], stats["cap"]
    queue = stats["queue_reference"]
    lines += [
        f"  sizes      median {pair(sizes['median_gpus'], ' GPUs', 0)}, "
        f"mean {pair(sizes['mean_gpus'], ' GPUs')}, largest {pair(sizes['max_gpus'], '', 0)}",
        f"             multi-node {sizes['multi_node_share'] * 100:.1f} %",
        f"  run time   median {pair(runs['median_s'], ' s', 0)}, mean {pair(runs['mean_s'], ' s', 0)}",
        f"  GPU-s/job  {pair(stats['gpu_seconds_per_job'], ' GPU-seconds per job', 0)}",
        f"  cap        {cap['capped_job_share'] * 100:.1f} % of jobs were larger than the lab's partitions "
        f"({cap['capped_gpu_time_share'] * 100:.1f} % of the GPU time): they ran on fewer GPUs for longer, "
        "their GPU time kept",
        f"             {cap['gpu_time_lost_to_limits'] * 100:.1f} % of the trace's GPU time was lost to time "
        "limits (jobs that needed longer timed out)",
        f"  outcomes   {shares(outcomes['by_count'])}",
        f"  GPU time   {shares(outcomes['by_gpu_time'])}",
        f"             timeouts hold {outcomes['gpu_time_in_timeouts'] * 100:.1f} % "
        "(counted with failed, as the traces do)",
        f"  timeouts   {percent(outcomes['timeout_share_of_failed'])} of failed "
        "(planned, plus jobs longer than their limit)",
        f"  classes    {shares(stats['classes'])} (of the jobs that fit each partition)",
        f"  queue      not planned (Slurm decides); trace reference median {queue['median_s']:g} s, "
        f"mean {queue['mean_s']:g} s",
    ]
    return lines


def _connect_live(handle: RunningLab, via: str, progress: Progress, source: Path | None) -> Submitter:
    """The live mode's way into Slurm, its wait for pyslurm's wheel told to `lab status` (the phase
    file) while it lasts, and why it failed when it did."""
    if via == "pyslurm" and pyslurm_wheel.cached() is None:
        background.note_phase(handle.name, "building pyslurm's wheel, then installing it in the controller")
    try:
        client = connect(handle, via, progress, source)
    except PyslurmError as error:
        background.note_phase(handle.name, f"pyslurm could not be had: {str(error).splitlines()[0]}")
        raise
    background.note_phase(handle.name, None)
    return client
