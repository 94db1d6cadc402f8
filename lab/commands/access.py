"""`lab status`, `lab sh` and `lab token`: what a running lab has and how to reach into it."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from typing import Annotated

import docker
import typer

from lab import contract, kinds, versions
from lab.attach import running
from lab.attach import status as status_report
from lab.bringup import engine
from lab.commands.options import KNOWN_ERRORS, LabOption, fail
from lab.progress import Progress

POLL_S = 2.0  # how often `lab status --wait` looks again
app = typer.Typer(rich_markup_mode="markdown")


@app.command()
def status(
    lab: LabOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="First wait for what `lab up` left working in the background (Prometheus' web UI, the "
            "egress gateway and the centre, the live workload's pyslurm wheel), saying each as it finishes.",
        ),
    ] = False,
    timeout: Annotated[float, typer.Option(help="Seconds --wait waits at most (then exit 1).")] = 1800,
) -> None:
    """Containers, daemons and endpoint URLs; in a Slurm lab also the node states with GRES, and what is
    still being built in the background (the lab is usable meanwhile)."""
    try:
        client = engine.require_engine()
        name = running.resolve_lab(client, lab)
        if wait:
            _wait_for_background_work(name, timeout)
        report = status_report.status(client, name, kinds.facts(name))
    except KNOWN_ERRORS as error:
        fail(error)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    typer.echo(f"lab {report['lab']}")
    if "slurm_exporter" in report:
        typer.echo(f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: {report['slurm_exporter']}")
    if "prometheus_ui" in report:
        typer.echo(f"prometheus web UI {versions.PROMETHEUS_UI_VERSION}: {report['prometheus_ui']}")
    if "fence" in report:
        typer.echo(f"fence (egress gateway → centre): {report['fence']}")
    if "workload" in report:
        typer.echo(f"workload: {report['workload']}")
    for row in report["containers"]:
        daemons = " ".join(f"{d}={s}" for d, s in row["daemons"].items()) or "-"
        typer.echo(f"  {row['host']:<12} {row['role']:<10} {row['state']:<8} {daemons}")
    typer.echo("nodes")
    for node in report["nodes"]:
        reason = f"  reason: {node['reason']}" if node["reason"] not in ("", "none") else ""
        typer.echo(
            f"  {node['name']:<12} {node['state']:<10} {node['gres']:<14} {node['partitions']}{reason}"
        )
    typer.echo("endpoints")
    for service, url in report["endpoints"].items():
        typer.echo(f"  {service}: {url}")
    typer.echo(f"  alert-receiver: {report['alert_receiver']}")


def _wait_for_background_work(lab: str, timeout_s: float) -> None:
    progress = Progress()
    deadline = time.monotonic() + timeout_s
    left = kinds.pending(lab)
    for work in left:
        progress.say(f"waiting: {work}")
    while left:
        if time.monotonic() > deadline:
            fail(running.LabError(f"still working after {timeout_s:.0f} s: {'; '.join(left)}"))
        time.sleep(POLL_S)
        now = kinds.pending(lab)
        for work in left:
            if work not in now:
                progress.say(f"done: {work}")
        left = now


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def sh(
    ctx: typer.Context,
    service: Annotated[str, typer.Argument(help="controller, dbd, restd, a node name or a rack name.")],
    lab: LabOption = None,
) -> None:
    """Run a command in a service container: `lab sh controller -- sinfo`. Exit code passed through.

    Without a command, opens an interactive shell. A node name of a rack lab runs in its rack.
    """

    try:
        client = engine.require_engine()
        name = running.resolve_lab(client, lab)
    except KNOWN_ERRORS as error:
        fail(error)
    host = _host_for(client, name, service)
    command = list(ctx.args) or ["bash", "-l"]
    docker_cli = shutil.which("docker")
    if docker_cli is None:
        fail(engine.PrerequisiteError("the docker CLI is missing. Fix: apt-get install docker.io"))
    interactive = ["-it"] if sys.stdin.isatty() and sys.stdout.isatty() else ["-i"]
    os.execv(docker_cli, ["docker", "exec", *interactive, contract.container_name(name, host), *command])


def _host_for(client: docker.DockerClient, lab: str, service: str) -> str:
    from lab.bringup import containers

    if containers.find_container(client, lab, service) is not None:
        return service
    for container in containers.lab_containers(client, lab):
        listing = container.exec_run(["test", "-d", f"/var/spool/slurm/slurmd-{service}"])
        if container.labels.get(contract.LABEL_ROLE) == "rack" and listing.exit_code == 0:
            return str(container.labels[contract.LABEL_HOST])
    fail(running.LabError(f"lab '{lab}' has no service or node '{service}'. See `lab status`."))


@app.command()
def token(
    user: Annotated[str, typer.Option(help="Slurm user the token is for.")] = "root",
    lifespan: Annotated[int, typer.Option(help="Seconds the token is valid.")] = 3600,
    lab: LabOption = None,
) -> None:
    """Print a slurmrestd JWT signed by slurmctld.

    Use: curl -H "X-SLURM-USER-NAME: alice" -H "X-SLURM-USER-TOKEN: $(lab token --user alice)" URL
    """
    from lab.attach.slurmrestd import RestError

    try:
        typer.echo(kinds.attach(engine.require_engine(), lab).token(user, lifespan).token)
    except (*KNOWN_ERRORS, RestError) as error:
        fail(error)
