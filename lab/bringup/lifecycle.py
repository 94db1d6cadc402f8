"""`lab up`, `lab down` and `lab status`: the steps in order, each reading what the one before made."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from lab import contract, versions
from lab.bringup import container_specs, containers, engine, images, keys, lock
from lab.bringup.provision import provision
from lab.paths import lab_state_dir, state_root
from lab.progress import Progress
from lab.slurm_exporter import binary as exporter
from lab.spec import slurm_blueprint as blueprint_module
from lab.spec.slurm_blueprint import Blueprint
from lab.workload import background as live_workload

DAEMONS_BY_ROLE = {
    "controller": ["munged", "slurmctld", "slurm_exporter"],
    "dbd": ["munged", "mariadb", "slurmdbd"],
    "restd": ["munged", "slurmrestd"],
    "prometheus": ["prometheus"],
    "runai": ["runai"],
}


class LabError(RuntimeError):
    """A lab command that cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class UpOptions:
    build: images.BuildOptions = field(default_factory=images.BuildOptions)
    keep_on_failure: bool = False
    workload: bool = True  # the live mode: a plausible workload keeps running after bring-up
    exporter: bool = True  # the pinned Slurm exporter on the controller
    exporter_source: Path | None = None  # its tag archive, when the module proxy refuses the module


def up(blueprint: Blueprint, source: Path, options: UpOptions, progress: Progress) -> dict[str, str]:
    with lock.held(lab_state_dir(blueprint.name), "up"):
        return _up(blueprint, source, options, progress)


def _up(blueprint: Blueprint, source: Path, options: UpOptions, progress: Progress) -> dict[str, str]:
    client = engine.ensure_engine(progress)
    engine.check_disk(state_root())
    state = lab_state_dir(blueprint.name)
    lab_keys = keys.ensure(state / "keys")
    built = _exporter(options, progress)
    (state / "exporter-status").write_text(
        f"{built.how} → {built.binary}\n" if built else "off (lab up --no-exporter)\n", encoding="utf-8"
    )
    images.build_all(client, options.build, progress)
    with progress.step(f"containers of lab '{blueprint.name}'"):
        containers.up(client, blueprint.name, container_specs.slurm_containers(blueprint), progress)
    try:
        with progress.step("provisioning with Ansible"):
            provision(blueprint, lab_keys, progress, built.binary if built else None)
    except Exception:
        if not options.keep_on_failure:
            progress.say("bring-up failed: removing the lab's containers (--keep-on-failure keeps them)")
            containers.down(client, blueprint.name, purge=False, progress=progress)
        raise
    shutil.copyfile(source, state / "blueprint.yaml")
    if options.workload and blueprint.workload is not None:
        pid = live_workload.start(blueprint.name, state / "blueprint.yaml")
        progress.say(f"live workload running (pid {pid}, log {live_workload.log_file(blueprint.name)})")
    elif not options.workload and live_workload.stop(blueprint.name):
        progress.say("live workload stopped (--no-workload)")
    return endpoints(client, blueprint.name)


def _exporter(options: UpOptions, progress: Progress) -> exporter.ExporterBuild | None:
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


def down(lab: str, purge: bool, progress: Progress) -> None:
    client = engine.require_engine()
    with lock.held(lab_state_dir(lab), "down"):
        if live_workload.stop(lab):
            progress.say("live workload stopped")
        containers.down(client, lab, purge, progress)
    if purge:
        state = lab_state_dir(lab)
        removed = keys.remove(state / "keys")
        shutil.rmtree(state, ignore_errors=True)
        progress.say(f"removed {len(removed)} keys and {state}")


def resolve_lab(client: docker.DockerClient, name: str | None) -> str:
    """The lab a command means: the one named, else the only one there is."""
    labs = containers.known_labs(client)
    if name is not None:
        return name
    if len(labs) == 1:
        return labs[0]
    if not labs:
        raise LabError("no lab is up. Fix: `lab up` (or `just lab-up`).")
    raise LabError(f"several labs are up ({', '.join(labs)}). Fix: name one with --lab NAME.")


def endpoints(client: docker.DockerClient, lab: str) -> dict[str, str]:
    urls = {}
    for container in containers.lab_containers(client, lab):
        ports = container.attrs.get("NetworkSettings", {}).get("Ports") or {}
        for inner, bindings in sorted(ports.items()):
            for binding in bindings or []:
                service = _SERVICE_BY_PORT.get(inner, f"{container.labels[contract.LABEL_HOST]}:{inner}")
                urls[service] = f"http://{binding['HostIp']}:{binding['HostPort']}"
    return urls


_SERVICE_BY_PORT = {f"{port}/tcp": name for port, name in contract.SERVICE_BY_PORT.items()}


def status(client: docker.DockerClient, lab: str) -> dict[str, Any]:
    found = containers.lab_containers(client, lab)
    if not found:
        raise LabError(f"lab '{lab}' has no containers. Fix: `lab up`.")
    rows = []
    controller = None
    for container in found:
        role = container.labels.get(contract.LABEL_ROLE, "")
        host = container.labels.get(contract.LABEL_HOST, "")
        daemons: dict[str, str] = {}
        if container.status == "running":
            daemons = _daemon_states(container, role)
        rows.append(
            {
                "name": container.name,
                "host": host,
                "role": role,
                "state": container.status,
                "daemons": daemons,
            }
        )
        if role == "controller" and container.status == "running":
            controller = container
    exporter_status = lab_state_dir(lab) / "exporter-status"
    return {
        "lab": lab,
        "slurm_exporter": exporter_status.read_text().strip() if exporter_status.exists() else "unknown",
        "workload": f"live (pid {pid})" if (pid := live_workload.running_pid(lab)) else "stopped",
        "containers": rows,
        "nodes": _nodes(controller) if controller is not None else [],
        "endpoints": endpoints(client, lab),
    }


def _daemon_states(container: Any, role: str) -> dict[str, str]:
    names = DAEMONS_BY_ROLE.get(role)
    if names is None:  # node or rack: one slurmd per node name, found from their pid files
        listing = container.exec_run(["sh", "-c", "ls /var/spool/slurm | sed -n 's/^slurmd-//p'"])
        names = ["munged", *[f"slurmd@{n}" for n in listing.output.decode().split()]]
    result = container.exec_run(["/usr/local/sbin/lab-daemon", "status", *names])
    states = {}
    for line in result.output.decode(errors="replace").splitlines():
        daemon, _, state = line.partition(" ")
        states[daemon] = state
    return states


def _nodes(controller: Any) -> list[dict[str, str]]:
    result = controller.exec_run(["sinfo", "--noheader", "--Node", "--format=%N|%P|%T|%G|%E"])
    if result.exit_code != 0:
        return []
    nodes: dict[str, dict[str, str]] = {}
    for line in result.output.decode(errors="replace").splitlines():
        name, partition, state, gres, reason = (line.split("|") + [""] * 5)[:5]
        node = nodes.setdefault(
            name, {"name": name, "state": state, "gres": gres, "reason": reason, "partitions": ""}
        )
        node["partitions"] = ",".join(filter(None, [node["partitions"], partition.rstrip("*")]))
    return list(nodes.values())


def running_blueprint(lab: str) -> Blueprint:
    """The blueprint a lab was brought up with (kept in its state directory by `lab up`)."""
    path = lab_state_dir(lab) / "blueprint.yaml"
    if not path.exists():
        raise LabError(f"lab '{lab}' has no recorded blueprint ({path}). Fix: `lab up --blueprint FILE`.")
    return blueprint_module.load(path)
