"""`lab drill NAME…`: fault drills against a running Slurm lab."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from lab import kinds
from lab.attach import running
from lab.bringup import containers, engine
from lab.commands.options import fail
from lab.drill import suite
from lab.drill.probe import DrillError
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.workload import background

app = typer.Typer(rich_markup_mode="markdown")


def _listing() -> str:
    lines = [
        f"  {name:<20} {d.breaks} (~{d.minutes:g} min{'' if d.fast else ', not in fast'})\n"
        f"  {'':<20} alerts: {d.alerts}"
        + (
            f"\n  {'':<20} room: {d.room} free GPU{'s' if d.room > 1 else ''} on one node, reserved"
            if d.room
            else ""
        )
        for name, d in suite.DRILLS.items()
    ]
    return "\n".join(["drills, in run order:", *lines, "groups: all (every drill), fast (all but node-loss)"])


@app.command("drill", no_args_is_help=True)
def drill(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Drills to run, or a group: all, fast. `--list` shows them.", show_default=False),
    ] = None,
    lab: Annotated[str | None, typer.Option(help="Lab name; default: the only lab that is up.")] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Directory for drills.md and drills.json; default .lab/LAB/drills/TIME."),
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the drills and exit.")] = False,
) -> None:
    """Break one part of a running Slurm lab with the real mechanism, check, restore, report.

    Each drill injects one fault while the live workload runs (a SIGKILL of slurmctld, slurmrestd, the
    DCGM shim or Prometheus; slurmdbd and MariaDB stopped; a node container killed; XIDs on several
    GPUs; a bad job-mapping directory; a burst of jobs), checks what a production cluster does,
    restores it, and prints PASS or FAIL with the time to recover. After every drill: the alerts its
    fault must cause (`--list` names them) reached the lab's receiver once each and resolved after the
    restore, and no other alert began; every job submitted meanwhile is in sacct with a terminal state
    once it left the queue; and no target the drill did not break has a scrape gap over two intervals.
    A drill whose jobs need GPUs first reserves the node in service with the most free GPUs (a Slurm
    reservation, lab-drill-NAME, its running jobs left to end) and waits up to 10 minutes for its room;
    the reservation is deleted after the drill. Exit 1 when a drill fails.

    Examples: `lab drill controller-restart`, `lab drill fast` (CI), `lab drill all` (~20 min).
    """
    if list_:
        typer.echo(_listing())
        return
    if not names:
        raise typer.BadParameter("name a drill or a group (all, fast); `lab drill --list` shows them.")
    progress = Progress()
    try:
        chosen = suite.select(names)
        client = engine.require_engine()
        handle = kinds.attach(client, lab)
        if handle.kind != "slurm":
            raise running.LabError(f"lab '{handle.name}' is a {handle.kind} lab: drills are for Slurm labs.")
        if containers.host_kinds(client, handle.name) != {"container"}:
            # The drills stop and start daemons through lab-daemon, which machine-like hosts do not have.
            raise running.LabError(
                f"lab '{handle.name}' runs on machine-like hosts (--hosts systemd): the drills drive "
                "container-native hosts only. Fix: run them on a lab brought up without --hosts systemd."
            )
    except (DrillError, running.LabError, engine.PrerequisiteError) as error:
        fail(error)
    workload = "running" if background.running_pid(handle.name) else "stopped"
    progress.say(
        f"live workload {workload}"
        + ("" if workload == "running" else ": the drills check their own jobs only (`lab up` starts it)")
    )
    outcomes = []
    for number, chosen_drill in enumerate(chosen, 1):
        progress.say(f"drill {number}/{len(chosen)}: {chosen_drill.name}: {chosen_drill.breaks}")
        outcome = suite.run_drill(handle, chosen_drill, progress.say)
        outcomes.append(outcome)
        for line in suite.report_lines(outcome):
            typer.echo(line)
    machine = f"{os.cpu_count()} cores, {platform.system()} {platform.release()}"
    machine += f"; lab '{handle.name}', live workload {workload}"
    target = out or lab_state_dir(handle.name) / "drills" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    suite.write_report(outcomes, target, machine)
    failed = [o.drill.name for o in outcomes if not o.passed]
    typer.echo(f"{len(outcomes) - len(failed)} of {len(outcomes)} drills passed; report in {target}")
    if failed:
        raise typer.Exit(1)
