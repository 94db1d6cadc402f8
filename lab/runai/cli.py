"""``lab runai``: serve the Run:ai construct (:mod:`lab.cli` mounts ``app`` as ``lab runai``).

Also runnable alone: ``python3 -m lab.runai.cli serve --help``.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, NoReturn, TextIO

import typer

from lab import contract
from lab.dcgm.shim import parse_listen_address
from lab.paths import state_root
from lab.runai import KAI_VERSION, RUNAI_DOCS_VERSION
from lab.runai.headless import build
from lab.spec.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, SCENARIOS, RunaiBlueprintError, load

app = typer.Typer(
    help=(
        f"The retired offline model of the Run:ai / KAI {KAI_VERSION} scheduling path, in Python "
        f"(Run:ai docs {RUNAI_DOCS_VERSION}). `lab up` does not run it: a Run:ai lab runs the real KAI "
        "Scheduler on a real Kubernetes (docs/runai.md)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def main() -> None:
    """Run:ai construct commands (``serve``)."""


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


def _dcgm_addresses(first: str, nodes: list[str]) -> dict[str, str]:
    host, port = parse_listen_address(first)
    if port and port + len(nodes) - 1 > 65535:
        raise ValueError(f"{len(nodes)} nodes from port {port} run past 65535; pick a lower first port")
    return {node: f"{host}:{port + i if port else 0}" for i, node in enumerate(nodes)}


@app.command()
def serve(
    blueprint: Annotated[
        Path,
        typer.Option(
            "--blueprint", "-b", help="Run:ai blueprint YAML: node pools, projects, quotas, workload mix."
        ),
    ] = DEFAULT_RUNAI_BLUEPRINT,
    address: Annotated[
        str,
        typer.Option(
            help="HOST:PORT for /metrics (runai_*, kube_*), /kai/<nodepool>/metrics and /api/v1/…; "
            "port 0 picks a free port. Bind 127.0.0.1 unless you mean to publish it."
        ),
    ] = f"127.0.0.1:{contract.RUNAI_API_PORT}",
    dcgm_address: Annotated[
        str,
        typer.Option(
            help="HOST:FIRSTPORT for the DCGM targets: node i of the blueprint (in order) listens on "
            "FIRSTPORT+i and serves /metrics like dcgm-exporter in Kubernetes mode; port 0 = free ports."
        ),
    ] = f"127.0.0.1:{contract.RUNAI_DCGM_FIRST_PORT}",
    scenario: Annotated[
        str, typer.Option(help=f"Failure mode on top of the baseline mix: {', '.join(SCENARIOS)}.")
    ] = "baseline",
    time_scale: Annotated[
        float,
        typer.Option(
            help="Simulated seconds per wall second: 1 is real time, 60 runs an hour per minute. "
            "Rates and durations stay the blueprint's; only the wall clock is compressed."
        ),
    ] = 1.0,
    seed: Annotated[
        int, typer.Option(help="Seed of arrivals, sizes, run times and GPU values (runs repeat).")
    ] = 0,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Directory for events.jsonl (core/v1 Events, one JSON per line), "
            "kai-scheduler-<nodepool>.log (KAI log format), pod-resources.json and faults/ "
            "(the DCGM shim's inputs). Default: <lab state>/runai."
        ),
    ] = None,
    steps: Annotated[
        int, typer.Option(help="Stop after this many scheduling steps (0: run until Ctrl-C).", min=0)
    ] = 0,
) -> None:
    """Serve the construct: step the simulated cluster and expose its series, API, events and logs."""
    if scenario not in SCENARIOS:
        _fail(f"--scenario {scenario!r} is unknown; use one of {', '.join(SCENARIOS)}")
    if not time_scale > 0:
        _fail(f"--time-scale {time_scale} must be > 0 (e.g. 1 for real time, 60 for an hour per minute)")
    try:
        parse_listen_address(address)
    except ValueError as error:
        _fail(f"--address: {error}")
    try:
        model = load(blueprint)
    except RunaiBlueprintError as error:
        _fail(str(error))
    nodes = [name for pool in model.node_pools for name in pool.node_names()]
    try:
        dcgm = _dcgm_addresses(dcgm_address, nodes)
    except ValueError as error:
        _fail(f"--dcgm-address: {error}")
    out_dir = out if out is not None else state_root() / "runai"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        _fail(f"--out {out_dir}: cannot create directory: {error.strerror}")
    _serve(model, scenario, out_dir, seed, address, dcgm, time_scale, steps)


def _serve(
    model: object,
    scenario: str,
    out_dir: Path,
    seed: int,
    address: str,
    dcgm: dict[str, str],
    time_scale: float,
    steps: int,
) -> None:
    from lab.runai.http_server import RunningConstruct
    from lab.spec.runai_blueprint import RunaiBlueprint

    assert isinstance(model, RunaiBlueprint)
    logs: dict[str, TextIO] = {
        pool.name: (out_dir / f"kai-scheduler-{pool.name}.log").open("a", encoding="utf-8")
        for pool in model.node_pools
    }
    events = (out_dir / "events.jsonl").open("a", encoding="utf-8")

    def on_event(line: str) -> None:
        events.write(line + "\n")

    def on_log(pool: str, line: str) -> None:
        logs[pool].write(line + "\n")

    import time

    run = build(
        model,
        scenario,
        out_dir,
        seed=seed,
        epoch=time.time(),
        keep_text=False,
        event_sink=on_event,
        log_sink=on_log,
        dcgm_address_for=dcgm.__getitem__,
    )
    done = threading.Event()

    def on_step(_: object) -> None:
        events.flush()
        for handle in logs.values():
            handle.flush()
        if steps and run.sim.steps >= steps:
            done.set()

    try:
        construct = RunningConstruct(
            run.sim, address, wall_seconds_per_step=model.clock.step_seconds / time_scale, on_step=on_step
        )
    except OSError as error:
        _fail(f"cannot listen ({error.strerror}); check --address {address} and --dcgm-address ports")
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    typer.echo(f"runai construct '{model.name}' scenario={scenario} seed={seed} time-scale={time_scale}")
    typer.echo(f"  metrics   http://{construct.address}/metrics")
    for pool in model.node_pools:
        typer.echo(f"  kai       http://{construct.address}/kai/{pool.name}/metrics")
    typer.echo(
        f"  api       http://{construct.address}/api/v1/workloads/telemetry?telemetryType=WORKLOADS_COUNT"
    )
    for node, addr in construct.dcgm_addresses.items():
        typer.echo(f"  dcgm      http://{addr}/metrics  ({node})")
    typer.echo(f"  events    {out_dir / 'events.jsonl'}")
    typer.echo(f"  logs      {out_dir}/kai-scheduler-<nodepool>.log")
    sys.stdout.flush()
    done.wait()
    construct.stop()
    for sig, handler in previous.items():
        signal.signal(sig, handler)
    events.close()
    for handle in logs.values():
        handle.close()


if __name__ == "__main__":
    app()
