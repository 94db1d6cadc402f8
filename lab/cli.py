"""The `lab` command. Thin: each command parses its flags and calls one module."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import docker
import typer

from lab import contract, kinds, versions
from lab.attach import running
from lab.attach import status as status_report
from lab.blueprint import slurm_blueprint as blueprint_module
from lab.blueprint.runai_blueprint import RunaiBlueprintError
from lab.bringup import engine, images, keys, lifecycle, lock
from lab.bringup.provision import write_inventory
from lab.paths import DEFAULT_BLUEPRINT, PROJECT_ROOT, lab_state_dir
from lab.progress import Progress
from lab.promql import PrometheusError
from lab.slurm_exporter.binary import ExporterError

app = typer.Typer(
    help=(
        "aifactory-lab: see the real series, labels, logs, alerts and churn of GPU-cluster scheduler paths "
        "before you touch a production cluster. A blueprint (blueprints/) declares one of two labs:\n\n"
        "- **Slurm lab** (`kind: slurm`, the default blueprint): a real Slurm 24.11 cluster in containers, "
        "the pinned Slurm exporter, a DCGM shim with fake GPUs on every node, Prometheus, Alertmanager and "
        "a live workload.\n"
        "- **Run:ai lab** (`lab up --blueprint blueprints/runai.yaml`): a real Kubernetes control plane with "
        "the real KAI Scheduler, kwok nodes and kube-state-metrics; the `runai_*` families computed from "
        "that cluster; the DCGM shim, Prometheus and Alertmanager.\n\n"
        "Start: `lab doctor` (what this machine lacks), `lab up`, `lab status`; "
        "`lab sh controller -- sinfo` runs a command in a Slurm lab; `lab down` stops a lab.\n\n"
        "Then: `lab fault` gives a GPU an XID or a throttle; `lab alerts` shows what fired and what "
        "Alertmanager delivered; `lab drill` breaks a Slurm daemon or node and times the recovery; "
        "`lab churn` reports a Slurm lab's series churn and cardinality; `lab capture` scrapes every "
        "target with provenance. `lab COMMAND --help` says more."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

BlueprintOption = Annotated[
    Path,
    typer.Option("--blueprint", "-b", help="Blueprint YAML (see blueprints/).", show_default=True),
]
LabOption = Annotated[
    str | None,
    typer.Option("--lab", help="Lab name (the blueprint's `name`); default: the only lab that is up."),
]

KNOWN_ERRORS = (
    docker.errors.DockerException,
    blueprint_module.BlueprintError,
    engine.PrerequisiteError,
    images.ImageBuildError,
    keys.KeysError,
    running.LabError,
    RunaiBlueprintError,
    lock.LabBusyError,
    ExporterError,
)


def _fail(error: Exception) -> NoReturn:
    typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


@app.command()
def up(
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
            help="How the live workload reaches Slurm: pyslurm (the default; its tag is built once, a few "
            "minutes, and installed in the controller) or slurmrestd (no build)."
        ),
    ] = "pyslurm",
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
    """
    from lab.workload import background, pyslurm_wheel, submitters

    if submit_via not in submitters.WAYS:
        _fail(ValueError(f"--submit-via {submit_via!r}: use one of {', '.join(submitters.WAYS)}"))
    progress = Progress(quiet=quiet)
    options = kinds.UpOptions(
        build=images.BuildOptions(
            base_image=base_image, ca_bundle=None if ca_bundle == "none" else Path(ca_bundle), rebuild=rebuild
        ),
        keep_on_failure=keep_on_failure,
        exporter=exporter,
        exporter_source=exporter_source,
        prometheus_ui_source=prometheus_ui_source,
        hosts=hosts,
        scenario=scenario,
        time_scale=time_scale,
        seed=seed,
    )
    try:
        kind, model = kinds.load(blueprint)
    except KNOWN_ERRORS as error:
        _fail(error)
    if hosts != "container" and kind.name != "slurm":
        _fail(ValueError(f"--hosts {hosts}: only Slurm blueprints run on machine-like hosts; drop --hosts."))
    try:
        handle = kind.up(model, blueprint, options, progress)
    except (*KNOWN_ERRORS, *kind.errors) as error:
        _fail(error)
    # The live workload starts after bring-up, from the blueprint the lab recorded.
    if getattr(model, "workload", None) is not None and workload:
        if submit_via == "pyslurm":
            try:
                submitters.prepare_pyslurm(handle, progress, pyslurm_source)
            except (pyslurm_wheel.PyslurmError, running.LabError) as error:
                _fail(
                    RuntimeError(
                        f"{error}\nThe lab is up without its live workload. Fix the above and run "
                        "`lab up` again, or `lab up --submit-via slurmrestd`."
                    )
                )
        pid = background.start(handle.name, handle.state_dir / "blueprint.yaml", submit_via)
        progress.say(f"live workload running (pid {pid}, log {background.log_file(handle.name)})")
    elif not workload and background.stop(handle.name):
        progress.say("live workload stopped (--no-workload)")
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
    from lab.workload import background

    progress = Progress()
    try:
        client = engine.require_engine()
        name = lab if lab is not None else _lab_or_default(client)
        if background.stop(name):
            progress.say("live workload stopped")
        lifecycle.down(name, purge, progress)
    except KNOWN_ERRORS as error:
        _fail(error)


@app.command()
def status(
    lab: LabOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Containers, daemons and endpoint URLs; in a Slurm lab also the node states with GRES."""
    try:
        client = engine.require_engine()
        name = running.resolve_lab(client, lab)
        report = status_report.status(client, name, kinds.facts(name))
    except KNOWN_ERRORS as error:
        _fail(error)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    typer.echo(f"lab {report['lab']}")
    if "slurm_exporter" in report:
        typer.echo(f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: {report['slurm_exporter']}")
    if "prometheus_ui" in report:
        typer.echo(f"prometheus web UI {versions.PROMETHEUS_UI_VERSION}: {report['prometheus_ui']}")
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
        _fail(error)
    host = _host_for(client, name, service)
    command = list(ctx.args) or ["bash", "-l"]
    docker_cli = shutil.which("docker")
    if docker_cli is None:
        _fail(engine.PrerequisiteError("the docker CLI is missing. Fix: apt-get install docker.io"))
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
    _fail(running.LabError(f"lab '{lab}' has no service or node '{service}'. See `lab status`."))


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
        _fail(error)


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
        model = blueprint_module.load(blueprint)
        lab_keys = keys.ensure(lab_state_dir(model.name) / "keys")
    except KNOWN_ERRORS as error:
        _fail(error)
    target = out or lab_state_dir(model.name) / ("inventory-ssh.yml" if ssh else "inventory-docker.yml")
    write_inventory(model, lab_keys, target, "real" if ssh else "container")
    if out is None:
        typer.echo(target.read_text(encoding="utf-8"), nl=False)
    else:
        typer.echo(f"wrote {target}", err=True)


def _mount_constructs() -> None:
    from lab.alerts.cli import alerts
    from lab.churn.cli import app as churn_app
    from lab.drill.cli import drill
    from lab.workload.cli import app as workload_app

    app.add_typer(workload_app, name="workload")
    app.add_typer(churn_app, name="churn")
    app.command("drill", no_args_is_help=True)(drill)
    app.command("alerts")(alerts)


_mount_constructs()

fault_app = typer.Typer(
    help="Inject GPU faults into a running lab.", no_args_is_help=True, rich_markup_mode="markdown"
)
app.add_typer(fault_app, name="fault")


@fault_app.command("xid")
def fault_xid(
    node: Annotated[str, typer.Argument(help="Slurm node name, e.g. dgx-003.")],
    gpu: Annotated[int, typer.Argument(help="GPU index on that node (0-7 on a DGX).")],
    code: Annotated[
        int, typer.Argument(help="XID code, e.g. 79 (GPU has fallen off the bus), 48 (DBE); 0 clears.")
    ],
    lab: LabOption = None,
) -> None:
    """Give a GPU an XID, as a real fault would.

    The node's DCGM series show it (DCGM_FI_DEV_XID_ERRORS with err_code/err_msg), the XID health
    check drains the node within its interval (30 s in the lab), and the job on that GPU fails with
    a CUDA error line carrying its job id. Clear with code 0: the health check's next run resumes
    the node it drained (a node drained for another reason stays drained).
    """
    from lab.attach.faults import FaultError, inject_xid
    from lab.dcgm.shim import write_injected_xid

    try:
        handle = kinds.attach(engine.require_engine(), lab)
        if handle.kind != "slurm":
            raise running.LabError(
                f"lab '{handle.name}' is a {handle.kind} lab: `lab fault xid` is for Slurm labs."
            )
        path = inject_xid(handle.blueprint, node, gpu, code, write_injected_xid)
    except (*KNOWN_ERRORS, FaultError) as error:
        _fail(error)
    typer.echo(f"{node} GPU {gpu}: XID {code} ({path})")


@fault_app.command("throttle")
def fault_throttle(
    node: Annotated[str, typer.Argument(help="Node name: a Slurm node (dgx-001) or a Run:ai lab's node.")],
    gpu: Annotated[int, typer.Argument(help="GPU index on that node (0-7 on a DGX).")],
    cause: Annotated[str, typer.Argument(help="power-brake, thermal or power-cap; clear ends the throttle.")],
    lab: LabOption = None,
) -> None:
    """Slow one GPU down, as a power brake, a cooling fault or a power cap would (the slow-job fault).

    On that GPU, while it runs a job (training values; signals/dcgm.md has the bases):

    - **power-brake**: DCGM_FI_DEV_SM_CLOCK 1980 → 990 MHz (halved), POWER_USAGE ~550 → ~130 W,
      GPU_TEMP falls toward ~33 C.
    - **thermal**: SM clock → 1485 MHz (75 %), GPU_TEMP → 87 C (τ 60 s), power → ~275 W.
    - **power-cap**: POWER_USAGE pinned at 350 W, SM clock → ~1635-1650 MHz.

    GPU_UTIL and GR_ENGINE_ACTIVE stay (kernels still run), DRAM_ACTIVE and NVLink fall with the
    clock. The job's other GPUs on the node (same hpc_job; same pod in a Run:ai lab) wait for it at
    every all-reduce: their PIPE_TENSOR_ACTIVE, DRAM_ACTIVE and NVLink fall to the straggler's clock
    share (×0.5 for a power brake) and their power with them; their SM clock and GPU_UTIL do not
    move. GPUs of other jobs do not change. With the opt-in `throttle` collectors profile,
    DCGM_FI_DEV_POWER_VIOLATION (power-cap) or DCGM_FI_DEV_THERMAL_VIOLATION (thermal) count 1 s per
    second. `clear` restores the GPU at the next scrape (temperature relaxes with τ 60 s).
    """
    from lab.attach.faults import FaultError, inject_throttle
    from lab.dcgm.shim import CAUSES, write_throttle

    try:
        handle = kinds.attach(engine.require_engine(), lab)
        path = inject_throttle(handle.blueprint, node, gpu, cause, tuple(CAUSES), write_throttle)
    except (*KNOWN_ERRORS, FaultError) as error:
        _fail(error)
    typer.echo(f"{node} GPU {gpu}: throttle {cause} ({path})")


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
        _fail(error)
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
        _fail(error)
    failed = False
    for job, problems in results.items():
        typer.echo(f"{job}: {'clean' if not problems else f'{len(problems)} problem(s)'}")
        for problem in problems:
            typer.echo(f"  {problem}")
        failed = failed or bool(problems)
    if not results:
        _fail(
            running.LabError(f"{capture_dir} has no construct to diff (no slurm, dcgm or runai inventory).")
        )
    if failed:
        raise typer.Exit(1)


@app.command()
def doctor() -> None:
    """Tell what this machine lacks to run the lab (Python, container engine, debootstrap, Go, gcc, the
    exporter's source, Node and npm, Chromium, Ansible, just, disk space) and how to fix each, and name
    the cgroup version. Changes nothing; exits 1 when something is missing."""
    from lab.kinds import doctor as checks

    findings = checks.run_all()
    typer.echo(checks.render(findings))
    if not all(finding.ok for finding in findings):
        raise typer.Exit(1)


@app.command()
def validate(blueprint: Annotated[Path, typer.Argument(help="Blueprint YAML to check.")]) -> None:
    """Check a blueprint without touching any container; prints a summary or every problem."""
    try:
        kind, model = kinds.load(blueprint)
        line = kind.summary(model, str(blueprint))
    except KNOWN_ERRORS as error:
        _fail(error)
    typer.echo(f"{blueprint}: {line}")


def _lab_or_default(client: docker.DockerClient) -> str:
    try:
        return running.resolve_lab(client, None)
    except running.LabError:
        return blueprint_module.load(DEFAULT_BLUEPRINT).name
