"""A Slurm lab: the real Slurm cluster, its pinned exporter, the DCGM shim on every node, Prometheus,
and (the blueprint's `egress`, on by default) the fence: the site's egress gateway and the centre.

`lab up` renders it once from the blueprint (containers, Ansible inventory and variables) and hands it to
the one bring-up. What the lab's first minutes do not need stays off that path: the exporter is built
beside the images and containers (provisioning waits for it), Prometheus' web UI and the fence, when
not cached, are built and installed in the background once the lab is up, and the live workload starts
at once and builds pyslurm's wheel itself before its first job (:func:`start_live_workload`). `lab
status` says what is still being built."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
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
from lab.bringup.render import METRICS_USER, Hosts, host_address
from lab.central import builds, fence_install
from lab.egress import fence as fence_hosts
from lab.egress import key as egress_key
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.prometheus_ui import build as prometheus_ui
from lab.prometheus_ui import install as ui_install
from lab.slurm_exporter import binary as exporter
from lab.slurm_exporter import upstream_rules
from lab.workload import background, pyslurm_wheel

HOST_KINDS = ("container", "systemd")
# The source areas whose egress records a Slurm lab sends (rules/egress-<area>.yml).
EGRESS_AREAS = ("dcgm", "slurm", "targets")
# The job log that crosses the fence, as the gateway sees every Slurm host's log directory
# (contract.SITE_LOGS_MOUNT/<host>/): the Prolog's and Epilog's lines and the health check's, at the
# defaults of prolog/dcgm-job-mapping and healthcheck/dcgm-xid-check, and slurmctld's (signals/logs.md).
EGRESS_LOGS = fence_hosts.SiteLogs(
    job_lines=(
        f"{contract.SITE_LOGS_MOUNT}/*/dcgm-job-mapping.log",
        f"{contract.SITE_LOGS_MOUNT}/*/dcgm-xid-check.log",
    ),
    slurmctld=(f"{contract.SITE_LOGS_MOUNT}/controller/slurmctld.log",),
)

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
        with (
            lock.for_bring_up(state, model.name, progress),
            ThreadPoolExecutor(1, thread_name_prefix="exporter") as pool,
        ):
            hosts = host_kind(model, options.hosts)
            lab_keys = keys.ensure(state / "keys")
            if model.slurm.serves_native_metrics:
                keys.ensure_metrics_token(state / "keys", lab_keys.jwt_key, METRICS_USER)
            _check_pyslurm(options)
            binary: Callable[[], Path] | None = None
            if options.exporter:  # built beside the images and containers; provisioning waits for it
                exporter_build = pool.submit(_exporter, options, state, progress)
                binary = partial(_binary, exporter_build)
            else:
                _exporter(options, state, progress)
            fence = None
            if model.egress.enabled:
                egress_key.ensure(model.name)
                fence = fence_install.for_bring_up(model.name, progress)
                if fence is None:  # built beside the bring-up, installed once it is done
                    fence_install.install_later(model.name, progress)
            web_ui = ui_install.for_bring_up(model.name, progress)
            if web_ui is None:  # the same: npm beside Ansible; the lab does not wait for it
                ui_install.install_later(model.name, options.prometheus_ui_source, progress)
            ssh_keys = None
            if hosts == "systemd":
                names = [spec.hostname for spec in container_specs.slurm_containers(model)]
                ssh_keys = ssh.ensure(state / "keys" / "ssh", names)
                images.write_tar(
                    shim_package(model.name),
                    images.package_files(images.IMAGE_PACKAGES["node"], images.IMAGE_MODULES),
                )
            rules = _exporter_rules(progress) if options.exporter else []
            rendered = render(model, source, lab_keys, binary, ssh_keys, web_ui, fence, rules)
            lifecycle.bring_up(rendered, options.build, options.keep_on_failure, progress)
        handle = running.attach(engine.require_engine(), model.name, self.name, model)
        start_live_workload(handle, model, options, progress)
        return handle

    def up_message(self, model: Blueprint, options: SlurmUpOptions) -> str:
        return f"lab '{model.name}' is up: {len(model.nodes.names)} nodes × {model.nodes.shape.gpus} GPUs"

    def facts(self, name: str) -> dict[str, str]:
        status = lab_state_dir(name) / "exporter-status"
        return {
            "slurm_exporter": status.read_text().strip() if status.exists() else "unknown",
            "workload": workload_fact(name),
            **ui_install.facts(name),
            **fence_install.facts(name),
        }


def workload_fact(lab: str) -> str:
    """`lab status`'s workload line: live (and how), waiting for pyslurm's wheel, or stopped (and why)."""
    pid, way, phase = background.running_pid(lab), background.submit_way(lab), background.phase(lab)
    through = f" through {way}" if way else ""
    if pid and phase:
        return f"live{through} (pid {pid}), not submitting yet: {phase}; jobs start when it is done"
    if pid:
        return f"live{through} (pid {pid})"
    return f"stopped: {phase} (log {background.log_file(lab)})" if phase else "stopped"


def start_live_workload(
    handle: running.RunningLab, model: Blueprint, options: SlurmUpOptions, progress: Progress
) -> None:
    """After bring-up: the blueprint's live workload (`lab workload run --live`) in the background,
    from the blueprint the lab recorded. Through pyslurm it builds the wheel (once, a few minutes) and
    installs it in the controller before its first job, saying so to `lab status`; `lab up` does not
    wait for that. With ``options.workload`` off, a live workload that runs is stopped."""
    if not options.workload:
        if background.stop(handle.name):
            progress.say("live workload stopped (--no-workload)")
        return
    if model.workload is None:
        return
    pid = background.start(handle.name, handle.state_dir / "blueprint.yaml", options.submit_via)
    waits = options.submit_via == "pyslurm" and pyslurm_wheel.cached() is None
    first = "; it builds pyslurm's wheel before its first job (`lab status` says when)" if waits else ""
    progress.say(f"live workload running (pid {pid}, log {background.log_file(handle.name)}){first}")


def _exporter_rules(progress: Progress) -> list[Path]:
    """The exporter's own alerts.yml and rules.yml from its tag archive, or none (said) when the archive
    is not there: a lab whose exporter came from the module proxy still comes up."""
    try:
        return upstream_rules.ensure()
    except exporter.ExporterError as error:
        progress.say(f"the exporter's own rules are not loaded: {error}")
        return []


def _check_pyslurm(options: SlurmUpOptions) -> None:
    """Before anything is built: the archive pyslurm's wheel would be built from, when none is cached,
    so that a live workload that cannot start is said at once, not minutes later in its log."""
    if not options.workload or options.submit_via != "pyslurm" or pyslurm_wheel.cached() is not None:
        return
    try:
        pyslurm_wheel.verify_archive(pyslurm_wheel.named_source(options.pyslurm_source))
    except pyslurm_wheel.PyslurmError as error:
        raise LiveWorkloadError(
            f"{error}\nNothing was started. Fix the above, or `lab up --submit-via slurmrestd` (no build), "
            "or `lab up --no-workload`."
        ) from error


def render(
    model: Blueprint,
    source: Path,
    lab_keys: LabKeys,
    binary: Path | Callable[[], Path] | None,
    ssh_keys: ssh.SshKeys | None = None,
    web_ui: prometheus_ui.UiBuild | None = None,
    fence: builds.CentralBinaries | None = None,
    exporter_rules: list[Path] | None = None,
) -> lifecycle.Rendered:
    """Everything the bring-up of a Slurm lab needs (pure): on container-native hosts, or with
    ``ssh_keys`` on machine-like ones (systemd, reached over SSH, packages installed by the roles).
    ``binary`` is the exporter's, or what gives it once its build beside the bring-up is done;
    ``fence`` are the cached binaries of the egress gateway and the centre (None: their roles are
    skipped, and `lab egress install` installs them once they are built); ``exporter_rules`` the
    exporter's own rule files, loaded beside the lab's."""
    hosts: Hosts = "container" if ssh_keys is None else "systemd"
    document = slurm_inventory(model, lab_keys, hosts, slurm_exporter=binary is not None)
    address = partial(host_address, model, hosts=hosts)
    fence_hosts.apply(document, model.egress, EGRESS_AREAS, address, logs=EGRESS_LOGS)
    extravars: dict[str, Any] = {
        "dcgm_health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "dcgm_job_mapping_gpu_uuids": contract.GPU_UUIDS_FILE,
    }
    if model.slurm.serves_native_metrics:
        extravars["prometheus_slurmctld_token_src"] = str(lab_keys.jwt_key.parent / keys.METRICS_TOKEN)
    if exporter_rules:
        extravars["prometheus_extra_rule_files"] = [str(path) for path in exporter_rules]
    late_vars = None
    if isinstance(binary, Path):
        extravars["slurm_exporter_binary_src"] = str(binary)
    elif binary is not None:
        wait_for = binary

        def late_vars() -> dict[str, Any]:
            return {"slurm_exporter_binary_src": str(wait_for())}

    extravars.update(prometheus_ui.install_vars(web_ui))
    extravars.update(fence_install.install_vars(fence))
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
        late_vars=late_vars,
        slurm=model.slurm.release,
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
    if wanted == "systemd" and model.slurm.version != versions.DEFAULT_SLURM_SERIES:
        raise ProvisionError(
            f"blueprint '{model.name}' runs Slurm {model.slurm.version}: machine-like hosts are Debian "
            f"{versions.DEBIAN_SUITE} hosts with its Slurm {versions.DEFAULT_SLURM_SERIES}. A host of "
            f"{model.slurm.release.debian_suite}, whose systemd (262) refuses to boot on a cgroup v1 "
            "hierarchy as this machine kind has, is not made.\n"
            "Fix: use --hosts container for another Slurm release."
        )
    return wanted


def shim_package(lab: str) -> Path:
    """The shim's code as an archive, for hosts without the node image."""
    return lab_state_dir(lab) / "dcgm-shim.tar"


def _exporter(options: SlurmUpOptions, state: Path, progress: Progress) -> exporter.ExporterBuild | None:
    """The exporter binary (built beside the images and containers; provisioning waits for it, so a lab
    never comes up half without it), its way recorded for `lab status`."""
    if not options.exporter:
        progress.say("the Slurm exporter is off (--no-exporter)")
        (state / "exporter-status").write_text("off (lab up --no-exporter)\n", encoding="utf-8")
        return None
    built = exporter.ensure_binary(progress, options.exporter_source)
    if built.cached:
        progress.say(f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: cached ({built.how})")
    else:
        progress.say(
            f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: {built.how} in {built.seconds:.1f} s"
        )
    (state / "exporter-status").write_text(f"{built.how} → {built.binary}\n", encoding="utf-8")
    return built


def _binary(build: Future[exporter.ExporterBuild | None]) -> Path:
    built = build.result()  # the build's own error, raised where the bring-up waits for it
    assert built is not None  # submitted only with the exporter on
    return built.binary


KIND = SlurmKind()
