"""`lab capture` and `lab dump`: every target of a running lab scraped with provenance, and a capture's
inventory diffed against signals/."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer

from lab import kinds
from lab.attach import running
from lab.bringup import engine
from lab.commands.options import KNOWN_ERRORS, LabOption, fail
from lab.paths import PROJECT_ROOT, lab_state_dir
from lab.progress import Progress
from lab.promql import PrometheusError

app = typer.Typer(rich_markup_mode="markdown")


@app.command()
def capture(
    duration: Annotated[float, typer.Option(help="Seconds to capture for.")] = 60,
    interval: Annotated[float, typer.Option(help="Seconds between scrapes of every target.")] = 15,
    out: Annotated[
        Path | None, typer.Option(help="Directory to write; default .lab/LAB/captures/TIME.")
    ] = None,
    lab: LabOption = None,
) -> None:
    """Scrape every Prometheus target of the lab and write one capture file per target.

    Each file has a provenance header (component and version, image package versions, blueprint,
    time, scrape interval) followed by the scrapes. Per scrape job an inventory is written too:
    family → type, help, label names and distinct values per label (inventory.json, inventory.md).
    """
    from datetime import UTC, datetime

    from lab.capture.run import CaptureError
    from lab.capture.run import capture as take

    progress = Progress()
    try:
        handle = kinds.attach(engine.require_engine(), lab)
        target = out or handle.state_dir / "captures" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        found = take(handle, duration, interval, target, progress)
    except (*KNOWN_ERRORS, CaptureError, PrometheusError) as error:
        fail(error)
    for job, entries in found.items():
        series = sum(entry["series"] for entry in entries.values())
        typer.echo(f"{job}: {len(entries)} families, {series} series")
    typer.echo(f"wrote {target}")


@app.command()
def dump(
    capture_dir: Annotated[
        Path | None,
        typer.Option("--capture", help="A capture directory; default: take a fresh 30 s capture."),
    ] = None,
    signals_dir: Annotated[Path, typer.Option("--signals", help="The signals/ directory.")] = PROJECT_ROOT
    / "signals",
    lab: LabOption = None,
) -> None:
    """Diff a capture's inventory against signals/: exits 1 on any family or label that is emitted but
    undocumented, documented as always emitted but never seen, or of another type."""
    from lab.capture.run import CaptureError
    from lab.capture.run import dump as compare

    if capture_dir is None:
        capture_dir = lab_state_dir(lab or "default") / "captures" / "dump"
        shutil.rmtree(capture_dir, ignore_errors=True)
        capture(duration=30, interval=15, out=capture_dir, lab=lab)
    try:
        results = compare(capture_dir, signals_dir)
    except (CaptureError, OSError, ValueError) as error:
        fail(error)
    failed = False
    for job, problems in results.items():
        typer.echo(f"{job}: {'clean' if not problems else f'{len(problems)} problem(s)'}")
        for problem in problems:
            typer.echo(f"  {problem}")
        failed = failed or bool(problems)
    if not results:
        fail(running.LabError(f"{capture_dir} has no construct to diff (no slurm, dcgm or runai inventory)."))
    if failed:
        raise typer.Exit(1)
