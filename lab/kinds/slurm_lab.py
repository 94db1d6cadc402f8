"""A Slurm lab: the real Slurm cluster, its pinned exporter, the DCGM shim on every node, Prometheus.

`lab up` renders it once from the blueprint (containers, Ansible inventory and variables), builds the
exporter binary before any container exists, hands both to the one bring-up, then starts the
blueprint's live workload (:func:`start_live_workload`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import contract, versions
from lab.attach import running
from lab.attach.slurmrestd import RestError
from lab.blueprint import slurm_blueprint
from lab.blueprint.slurm_blueprint import Blueprint
from lab.bringup import container_specs, containers, engine, images, keys, lifecycle, lock, ssh
from lab.bringup.keys import LabKeys
from lab.bringup.provision import ProvisionError, slurm_inventory
from lab.bringup.render import Hosts
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.prometheus_ui import build as prometheus_ui
from lab.slurm_exporter import binary as exporter
from lab.workload import background

HOST_KINDS = ("container", "systemd")

# A lab shows an XID drain within one health-check run of 30 s instead of a real site's 300 s.
HEALTH_CHECK_INTERVAL_S = 30


@dataclass(frozen=True)
class SlurmUpOptions:
    """The options of `lab up` for a Slurm blueprint."""

    build: images.BuildOptions = field(default_factory=images.BuildOptions)
    keep_on_failure: bool = False
    prometheus_ui_source: Path | None = None  # Prometheus' web UI: the tag's web/ui archive to build from
    exporter: bool = True  # the pinned Slurm exporter on the controller
    exporter_source: Path | None = None  # its tag archive, when the module proxy refuses the module
    hosts: str = "container"  # container (lab-daemon) | systemd (machine-like hosts over SSH)
    workload: bool = True  # the blueprint's live workload after bring-up (False: stop a running one)
    submit_via: str = "pyslurm"  # how the live workload reaches Slurm: pyslurm | slurmrestd
    pyslurm_source: Path | None = None  # pyslurm's tag archive, for the pyslurm way


class LiveWorkloadError(RuntimeError):
    """The lab is up, but its live workload could not start; the message says how to start it."""


class SlurmKind:
    name = "slurm"
    errors: tuple[type[Exception], ...] = (
        slurm_blueprint.BlueprintError,
        ProvisionError,
        RestError,
        LiveWorkloadError,
    )

    def load(self, path: Path) -> Blueprint:
        return slurm_blueprint.load(path)

    def summary(self, model: Blueprint, source: str) -> str:
        if model.workload is not None:
            from lab.workload.plan import check_against

            check_against(model, source)
        gpus = model.nodes.count * model.nodes.shape.gpus
        return (
            f"lab '{model.name}', {model.nodes.count} nodes ({model.topology.layout}), {gpus} GPUs, "
            f"{len(model.partitions)} partitions, {len(model.accounts)} accounts, "
            f"{len(model.all_users)} users"
        )

    def up(
        self, model: Blueprint, source: Path, options: SlurmUpOptions, progress: Progress
    ) -> running.RunningLab:
        state = lab_state_dir(model.name)
        with lock.held(state, "up"):
            hosts = host_kind(model, options.hosts)
            lab_keys = keys.ensure(state / "keys")
            built = _exporter(options, progress)
            (state / "exporter-status").write_text(
                f"{built.how} → {built.binary}\n" if built else "off (lab up --no-exporter)\n",
                encoding="utf-8",
            )
            web_ui = prometheus_ui.prepare(
                progress, options.prometheus_ui_source, state / prometheus_ui.STATUS_FILE
            )
            ssh_keys = None
            if hosts == "systemd":
                names = [spec.hostname for spec in container_specs.slurm_containers(model)]
                ssh_keys = ssh.ensure(state / "keys" / "ssh", names)
                images.write_tar(
                    shim_package(model.name), images.package_files(("dcgm",), images.IMAGE_MODULES)
                )
            rendered = render(model, source, lab_keys, built.binary if built else None, ssh_keys, web_ui)
            lifecycle.bring_up(rendered, options.build, options.keep_on_failure, progress)
        handle = running.attach(engine.require_engine(), model.name, self.name, model)
        start_live_workload(handle, model, options, progress)
        return handle

    def up_message(self, model: Blueprint, options: SlurmUpOptions) -> str:
        return f"lab '{model.name}' is up: {len(model.nodes.names)} nodes × {model.nodes.shape.gpus} GPUs"

    def facts(self, name: str) -> dict[str, str]:
        status = lab_state_dir(name) / "exporter-status"
        pid, way = background.running_pid(name), background.submit_way(name)
        through = f" through {way}" if way else ""
        return {
            "slurm_exporter": status.read_text().strip() if status.exists() else "unknown",
            "workload": f"live{through} (pid {pid})" if pid else "stopped",
            **prometheus_ui.facts(lab_state_dir(name)),
        }


def start_live_workload(
    handle: running.RunningLab, model: Blueprint, options: SlurmUpOptions, progress: Progress
) -> None:
    """After bring-up: the blueprint's live workload (`lab workload run --live`) in the background,
    from the blueprint the lab recorded; through pyslurm, its wheel is built (once) and installed in the
    controller first. With ``options.workload`` off, a live workload that runs is stopped. Raises
    :class:`LiveWorkloadError` when pyslurm cannot be had: the lab stays up without its workload."""
    from lab.workload import pyslurm_wheel, submitters

    if not options.workload:
        if background.stop(handle.name):
            progress.say("live workload stopped (--no-workload)")
        return
    if model.workload is None:
        return
    if options.submit_via == "pyslurm":
        try:
            submitters.prepare_pyslurm(handle, progress, options.pyslurm_source)
        except (pyslurm_wheel.PyslurmError, running.LabError) as error:
            raise LiveWorkloadError(
                f"{error}\nThe lab is up without its live workload. Fix the above and run "
                "`lab up` again, or `lab up --submit-via slurmrestd`."
            ) from error
    pid = background.start(handle.name, handle.state_dir / "blueprint.yaml", options.submit_via)
    progress.say(f"live workload running (pid {pid}, log {background.log_file(handle.name)})")


def render(
    model: Blueprint,
    source: Path,
    lab_keys: LabKeys,
    binary: Path | None,
    ssh_keys: ssh.SshKeys | None = None,
    web_ui: prometheus_ui.UiBuild | None = None,
) -> lifecycle.Rendered:
    """Everything the bring-up of a Slurm lab needs (pure): on container-native hosts, or with
    ``ssh_keys`` on machine-like ones (systemd, reached over SSH, packages installed by the roles)."""
    hosts: Hosts = "container" if ssh_keys is None else "systemd"
    document = slurm_inventory(model, lab_keys, hosts, slurm_exporter=binary is not None)
    extravars: dict[str, Any] = {"dcgm_health_check_interval": HEALTH_CHECK_INTERVAL_S}
    if binary is not None:
        extravars["slurm_exporter_binary_src"] = str(binary)
    extravars.update(prometheus_ui.install_vars(web_ui))
    specs = container_specs.slurm_containers(model)
    if ssh_keys is not None:
        document["all"]["vars"].update(
            ssh.connection_vars(ssh_keys), dcgm_shim_package_src=str(shim_package(model.name))
        )
        specs = container_specs.machines(
            specs, {spec.hostname: ssh_keys.binds(spec.hostname) for spec in specs}
        )
    return lifecycle.Rendered(
        name=model.name,
        specs=specs,
        inventory=document,
        extravars=extravars,
        blueprint_source=source,
        state_dirs=(contract.slurm_config_dir(model.name), contract.alerts_dir(model.name)),
        ssh=ssh_keys,
    )


def host_kind(model: Blueprint, wanted: str) -> str:
    """The kind of host the lab gets; a lab that has containers keeps their kind (`lab down` first)."""
    if wanted not in HOST_KINDS:
        raise ProvisionError(f"--hosts {wanted!r}: choose one of {', '.join(HOST_KINDS)}.")
    client = engine.engine_client()
    current = containers.host_kinds(client, model.name) if client is not None else set()
    if current and current != {wanted}:
        kind = "/".join(sorted(current))
        raise ProvisionError(
            f"lab '{model.name}' runs on {kind} hosts; --hosts {wanted} would replace every host.\n"
            f"Fix: `lab down --lab {model.name}` first, or keep --hosts {kind}."
        )
    if wanted == "systemd" and model.racks:
        raise ProvisionError(
            f"blueprint '{model.name}' has racks (many slurmd per host): a systemd host runs one slurmd "
            "(Debian's slurmd.service).\nFix: use --hosts container for rack blueprints."
        )
    return wanted


def shim_package(lab: str) -> Path:
    """The shim's code as an archive, for hosts without the node image."""
    return lab_state_dir(lab) / "dcgm-shim.tar"


def _exporter(options: SlurmUpOptions, progress: Progress) -> exporter.ExporterBuild | None:
    """The exporter binary, before any container exists: a lab never comes up half without it."""
    if not options.exporter:
        progress.say("the Slurm exporter is off (--no-exporter)")
        return None
    built = exporter.ensure_binary(progress, options.exporter_source)
    if built.cached:
        progress.say(f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: cached ({built.how})")
    else:
        progress.say(
            f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: {built.how} in {built.seconds:.1f} s"
        )
    return built


KIND = SlurmKind()
