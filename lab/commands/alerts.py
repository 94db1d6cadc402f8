"""`lab alerts`: what is firing and what Alertmanager delivered."""

from __future__ import annotations

from typing import Annotated

import docker
import typer

from lab import contract, kinds
from lab.alerts import listing
from lab.attach import running
from lab.bringup import engine
from lab.commands.options import fail
from lab.promql import PrometheusError
from lab.promql import alerts as prometheus_alerts

app = typer.Typer(rich_markup_mode="markdown")


@app.command("alerts")
def alerts(
    lab: Annotated[str | None, typer.Option(help="Lab name; default: the only lab that is up.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    limit: Annotated[int, typer.Option(min=1, help="At most this many of each, newest first.")] = 20,
) -> None:
    """What the lab's alerting rules have firing now, and what Alertmanager delivered, newest first.

    Firing: Prometheus' /api/v1/alerts (state pending or firing, labels, activeAt). Delivered: every
    notification Alertmanager sent to the lab's webhook receiver, one JSON line each in
    .lab/LAB/alerts/notifications.jsonl (receive time, status, group labels, each alert's labels and
    startsAt). Alertmanager itself answers on the `alertmanager` endpoint of `lab status`
    (/api/v2/alerts, /-/ready); signals/alerts.md lists every field.

    Examples: `lab alerts`, `lab alerts --limit 5`, `lab alerts --json | jq '.delivered[0]'`.
    """
    try:
        handle = kinds.attach(engine.require_engine(), lab)
        firing = listing.firing_from(prometheus_alerts(handle.prometheus_url))
        path = contract.alerts_dir(handle.name) / contract.ALERTS_FILE
        delivered = listing.read_delivered(path)
    except (
        listing.AlertsError,
        PrometheusError,
        running.LabError,
        engine.PrerequisiteError,
        docker.errors.DockerException,
        OSError,
    ) as error:
        fail(error)
    if as_json:
        typer.echo(listing.as_json(firing, delivered, limit))
    else:
        typer.echo(listing.as_text(firing, delivered, handle.prometheus_url, path, limit))
