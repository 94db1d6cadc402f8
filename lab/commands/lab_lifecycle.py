"""`lab up`, `lab down`, `lab inventory`, `lab doctor` and `lab validate`: a lab brought up and down, and
what comes before (the machine's prerequisites, a blueprint checked, an inventory for real hosts)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, TypeVar

import docker
import typer

from lab import kinds
from lab.attach import running
from lab.blueprint import slurm_blueprint
from lab.bringup import engine, images, keys, lifecycle
from lab.bringup.provision import write_inventory
from lab.commands.options import KNOWN_ERRORS, BlueprintOption, LabOption, fail
from lab.kinds.base import LabKind
from lab.paths import DEFAULT_BLUEPRINT, lab_state_dir
from lab.progress import Progress

app = typer.Typer(rich_markup_mode="markdown")

# The flags of `lab up` that only one kind reads (parameter names); a blueprint of the other kind
# refuses them when they are given.
SLURM_FLAGS = ("workload", "submit_via", "pyslurm_source", "exporter_source", "exporter", "hosts")
RUNAI_FLAGS = ("scenario", "time_scale", "seed")

Model = TypeVar("Model")
Options = TypeVar("Options")


@app.command()
def up(
    ctx: typer.Context,
    blueprint: BlueprintOption = DEFAULT_BLUEPRINT,
    base_image: Annotated[
        str | None,
        typer.Option(help="Registry image to build on (e.g. debian:trixie) instead of debootstrap."),
    ] = None,
    ca_bundle: Annotated[
        str,
        typer.Option(help="PEM CA bundle trusted inside images (for TLS-intercepting proxies), or 'none'."),
    ] = str(images.SYSTEM_CA_BUNDLE),
    keep_on_failure: Annotated[
        bool, typer.Option(help="Keep the containers when bring-up fails, for inspection.")
    ] = False,
    rebuild: Annotated[
        bool, typer.Option(help="Rebuild every image from scratch (no cache), e.g. for Debian updates.")
    ] = False,
    workload: Annotated[
        bool,
        typer.Option(
            help="Live mode: keep the blueprint's plausible workload running (`lab workload run --live`)."
        ),
    ] = True,
    submit_via: Annotated[
        str,
        typer.Option(
            help="How the live workload reaches Slurm: pyslurm (its tag is built once, a few minutes, and "
            "installed in the controller), slurmrestd (no build), or auto (the default): pyslurm where it "
            "has a release for the blueprint's Slurm (24.11), slurmrestd otherwise (26.05)."
        ),
    ] = "auto",
    pyslurm_source: Annotated[
        Path | None,
        typer.Option(
            help="pyslurm's tag archive (default: $LAB_PYSLURM_SOURCE, else "
            "../shared/vendor/pyslurm-24.11.0.tar.gz); its sha256 must match lab/versions.py."
        ),
    ] = None,
    exporter_source: Annotated[
        Path | None,
        typer.Option(
            help="The Slurm exporter's tag archive to build from when the Go module proxy refuses the "
            "module (default: $LAB_EXPORTER_SOURCE, else ../shared/vendor/slurm_exporter-1.8.4.tar.gz); "
            "its sha256 must match lab/versions.py."
        ),
    ] = None,
    exporter: Annotated[
        bool,
        typer.Option(
            help="Run the pinned Slurm exporter on the controller (--no-exporter: a lab without it)."
        ),
    ] = True,
    prometheus_ui_source: Annotated[
        Path | None,
        typer.Option(
            help="The tag's web/ui archive Prometheus' React UI is built from, once, with npm (default: "
            "$LAB_PROMETHEUS_UI_SOURCE, else ../shared/vendor/prometheus-web-ui-2.53.3.tar.gz); its sha256 "
            "must match lab/versions.py. When the build fails the lab comes up with Debian's page."
        ),
    ] = None,
    hosts: Annotated[
        str,
        typer.Option(
            help="Slurm blueprints: 'container' (container-native hosts, daemons by lab-daemon) or "
            "'systemd' (machine-like hosts: systemd as PID 1, reached only over SSH with the lab's keys, "
            "packages installed by the roles as on real nodes; see docs/real-clusters.md)."
        ),
    ] = "container",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    scenario: Annotated[
        str,
        typer.Option(
            help="Run:ai blueprints only: baseline, quota-exhaustion, preemption-storm, gpu-fault. "
            "Another scenario is a new cluster (etcd emptied); the real KAI Scheduler plays it."
        ),
    ] = "baseline",
    time_scale: Annotated[
        float,
        typer.Option(
            help="Run:ai blueprints only: blueprint seconds per wall second (arrivals, run times, "
            "scenario times); the scheduler itself runs in real time."
        ),
    ] = 1.0,
    seed: Annotated[
        int, typer.Option(help="Run:ai blueprints only: seed of arrivals, sizes and run times.")
    ] = 0,
) -> None:
    """Build images if needed, start the containers, provision Slurm and wait until every node is idle;
    for a Run:ai blueprint, a real Kubernetes with the KAI Scheduler (binaries built once and cached).

    Idempotent: run it again after editing the blueprint and only what changed is redone. As root on
    Debian it installs and starts a missing container engine (docker.io) and debootstrap.

    What the lab's first minutes do not need is not waited for: the Slurm exporter builds beside the
    images; Prometheus' web UI, when no build is cached, is built and installed in the background
    (`lab web-ui`); the live workload builds pyslurm's wheel itself before its first job. `lab status`
    says what is still being built; `lab status --wait` waits for it.
    """
    build = images.BuildOptions(
        base_image=base_image, ca_bundle=None if ca_bundle == "none" else Path(ca_bundle), rebuild=rebuild
    )
    try:
        loaded = kinds.load(blueprint)
    except KNOWN_ERRORS as error:
        fail(error)
    progress = Progress(quiet=quiet)
    if isinstance(loaded, kinds.SlurmLoaded):
        _refuse_flags(ctx, RUNAI_FLAGS, blueprint, "Run:ai", "Slurm")
        from lab.workload.pyslurm_wheel import PyslurmError
        from lab.workload.submitters import resolve

        try:
            submit_via = resolve(submit_via, loaded.model.slurm.release)
        except (ValueError, PyslurmError) as error:
            fail(error)
        slurm_options = kinds.SlurmUpOptions(
            build=build,
            keep_on_failure=keep_on_failure,
            prometheus_ui_source=prometheus_ui_source,
            exporter=exporter,
            exporter_source=exporter_source,
            hosts=hosts,
            workload=workload,
            submit_via=submit_via,
            pyslurm_source=pyslurm_source,
        )
        _bring_up(loaded.kind, loaded.model, blueprint, slurm_options, progress)
    else:
        _refuse_flags(ctx, SLURM_FLAGS, blueprint, "Slurm", "Run:ai")
        runai_options = kinds.RunaiUpOptions(
            build=build,
            keep_on_failure=keep_on_failure,
            prometheus_ui_source=prometheus_ui_source,
            scenario=scenario,
            time_scale=time_scale,
            seed=seed,
        )
        _bring_up(loaded.kind, loaded.model, blueprint, runai_options, progress)


def _refuse_flags(ctx: typer.Context, names: tuple[str, ...], blueprint: Path, other: str, this: str) -> None:
    """Exit 1, naming them, when flags that only the other kind reads were given."""
    given = []
    for param in ctx.command.params:
        name = param.name
        if name is None or name not in names:
            continue
        source = ctx.get_parameter_source(name)  # by name: typer may carry its own copy of click's enum
        if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            continue
        negative = bool(param.secondary_opts) and ctx.params[name] is False  # --no-workload, --no-exporter
        given.append((param.secondary_opts if negative else param.opts)[0])
    if not given:
        return
    flags = ", ".join(given)
    verb, pronoun = ("is", "it") if len(given) == 1 else ("are", "them")
    fail(
        ValueError(
            f"{flags} {verb} for {other} blueprints; {_shown(blueprint)} is a {this} blueprint. "
            f"Fix: drop {pronoun}, or name a {other} blueprint with --blueprint."
        )
    )


def _shown(path: Path) -> str:
    """The path as the user would type it: relative to the working directory when under it."""
    relative = os.path.relpath(path.resolve(), Path.cwd())
    return str(path) if relative.startswith("..") else relative


def _bring_up(
    kind: LabKind[Model, Options], model: Model, source: Path, options: Options, progress: Progress
) -> None:
    try:
        handle = kind.up(model, source, options, progress)
    except (*KNOWN_ERRORS, *kind.errors) as error:
        fail(error)
    progress.say(kind.up_message(model, options))
    for service, url in handle.endpoints.items():
        typer.echo(f"{service}: {url}")


@app.command()
def down(
    lab: LabOption = None,
    purge: Annotated[
        bool, typer.Option(help="Also remove volumes (accounting data), keys and state.")
    ] = False,
) -> None:
    """Stop and remove the lab's containers and network (with --purge: volumes, keys, state too)."""
    from lab.central import fence_install
    from lab.prometheus_ui import install as ui_install
    from lab.workload import background

    progress = Progress()
    try:
        client = engine.require_engine()
        name = lab if lab is not None else _lab_or_default(client)
        if background.stop(name):
            progress.say("live workload stopped")
        if ui_install.stop(name):
            progress.say("the web UI's background build stopped")
        if fence_install.stop(name):
            progress.say("the fence's background build stopped")
        lifecycle.down(name, purge, progress)
    except KNOWN_ERRORS as error:
        fail(error)


def _lab_or_default(client: docker.DockerClient) -> str:
    try:
        return running.resolve_lab(client, None)
    except running.LabError:
        return slurm_blueprint.load(DEFAULT_BLUEPRINT).name


@app.command()
def inventory(
    blueprint: BlueprintOption = DEFAULT_BLUEPRINT,
    ssh: Annotated[
        bool, typer.Option(help="For real hosts over SSH (systemd), not the lab's containers.")
    ] = False,
    out: Annotated[Path | None, typer.Option(help="Where to write it; default: stdout.")] = None,
) -> None:
    """Write the Ansible inventory for a blueprint; with --ssh, for deploying to real hosts.

    Then: ansible-playbook -i INVENTORY ansible/site.yml  (see docs/real-clusters.md).
    """
    try:
        model = slurm_blueprint.load(blueprint)
        lab_keys = keys.ensure(lab_state_dir(model.name) / "keys")
    except KNOWN_ERRORS as error:
        fail(error)
    target = out or lab_state_dir(model.name) / ("inventory-ssh.yml" if ssh else "inventory-docker.yml")
    write_inventory(model, lab_keys, target, "real" if ssh else "container")
    if out is None:
        typer.echo(target.read_text(encoding="utf-8"), nl=False)
    else:
        typer.echo(f"wrote {target}", err=True)


@app.command()
def doctor() -> None:
    """Tell what this machine lacks to run the lab (Python, container engine, debootstrap, Go, the
    exporter's source, Ansible, just, disk space), what an option lacks (Node and npm for Prometheus'
    web UI) and what only the tests lack (gcc, Chromium, ssh), with the fix of each, and name the cgroup
    version. Changes nothing; exits 1 only when something the lab itself needs is missing."""
    from lab.kinds import doctor as checks

    findings = checks.run_all()
    typer.echo(checks.render(findings))
    if not checks.lab_can_run(findings):
        raise typer.Exit(1)


@app.command()
def validate(blueprint: Annotated[Path, typer.Argument(help="Blueprint YAML to check.")]) -> None:
    """Check a blueprint without touching any container; prints a summary or every problem."""
    try:
        line = kinds.load(blueprint).summary(str(blueprint))
    except KNOWN_ERRORS as error:
        fail(error)
    typer.echo(f"{blueprint}: {line}")
