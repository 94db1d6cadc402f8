"""Bring-up, take-down and status of a lab of any kind: the steps in order, each reading what the one
before made. What a kind renders (:class:`Rendered`) comes from :mod:`lab.kinds`."""

from __future__ import annotations

import copy
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from lab import contract
from lab.bringup import containers, engine, images, keys, lock, running, ssh
from lab.bringup.container_specs import ContainerSpec
from lab.bringup.provision import run_playbook, write_hosts
from lab.paths import lab_state_dir, state_root
from lab.progress import Progress

DAEMONS_BY_ROLE = {
    "controller": ["munged", "slurmctld", "slurm_exporter"],
    "dbd": ["munged", "mariadb", "slurmdbd"],
    "restd": ["munged", "slurmrestd"],
    "prometheus": ["prometheus", "alertmanager", "alert-receiver"],
    "runai": ["runai"],
}


@dataclass(frozen=True)
class Rendered:
    """Everything one bring-up needs, rendered by the lab's kind before any container exists."""

    name: str
    specs: list[ContainerSpec]
    inventory: dict[str, Any]  # the Ansible inventory document (hosts.yml)
    extravars: dict[str, Any]  # Ansible extra vars: the lab's settings over ansible/group_vars
    blueprint_source: Path  # recorded in the state directory once the lab is up
    state_dirs: tuple[Path, ...] = ()  # made before the containers start (bind-mount sources)
    ssh: ssh.SshKeys | None = None  # machine-like hosts (`--hosts systemd`): reached over SSH only


def bring_up(
    rendered: Rendered, build: images.BuildOptions, keep_on_failure: bool, progress: Progress
) -> None:
    """The one bring-up of every lab kind: images, containers, Ansible; nothing half-done is left
    behind (a failed provisioning removes the containers unless ``keep_on_failure``)."""
    client = engine.ensure_engine(progress)
    engine.check_disk(state_root())
    state = lab_state_dir(rendered.name)
    if rendered.ssh is None:
        images.build_all(client, build, progress)
    else:
        images.build_host(client, build, progress)
    for directory in rendered.state_dirs:
        directory.mkdir(parents=True, exist_ok=True)
    with progress.step(f"containers of lab '{rendered.name}'"):
        containers.up(client, rendered.name, rendered.specs, progress)
    inventory = rendered.inventory
    if rendered.ssh is not None:
        with progress.step("sshd on every host"):
            inventory = _over_ssh(client, rendered.name, rendered.ssh, inventory)
    private = state / "ansible"
    hosts = write_hosts(private / "inventory" / "hosts.yml", inventory)
    try:
        with progress.step("provisioning with Ansible"):
            run_playbook(private, hosts, rendered.extravars, progress)
    except Exception:
        if not keep_on_failure:
            progress.say("bring-up failed: removing the lab's containers (--keep-on-failure keeps them)")
            containers.down(client, rendered.name, purge=False, progress=progress)
        raise
    shutil.copyfile(rendered.blueprint_source, state / "blueprint.yaml")


def _over_ssh(
    client: docker.DockerClient, lab: str, keys: ssh.SshKeys, document: dict[str, Any]
) -> dict[str, Any]:
    """The inventory with each host's loopback SSH address, once every sshd answers with the host key
    known_hosts now holds."""
    ports = containers.ssh_ports(client, lab)
    ssh.write_known_hosts(keys, ports)
    ssh.wait_for_sshd(ports)
    result = copy.deepcopy(document)
    for group in result["all"]["children"].values():
        for host, host_vars in group.get("hosts", {}).items():
            if host not in ports:
                raise running.LabError(f"host '{host}' of lab '{lab}' publishes no SSH port")
            host_vars.update(ansible_host="127.0.0.1", ansible_port=ports[host])
    return result


def down(lab: str, purge: bool, progress: Progress) -> None:
    client = engine.require_engine()
    with lock.held(lab_state_dir(lab), "down"):
        containers.down(client, lab, purge, progress)
    if purge:
        state = lab_state_dir(lab)
        removed = keys.remove(state / "keys")
        shutil.rmtree(state, ignore_errors=True)
        progress.say(f"removed {len(removed)} keys and {state}")


def status(client: docker.DockerClient, lab: str, facts: dict[str, str]) -> dict[str, Any]:
    """Containers with their daemons, Slurm's node states and the endpoints; ``facts`` are the kind's
    own lines (for Slurm: how its exporter was built, whether its workload runs)."""
    found = containers.lab_containers(client, lab)
    if not found:
        raise running.LabError(f"lab '{lab}' has no containers. Fix: `lab up`.")
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
    return {
        "lab": lab,
        **facts,
        "containers": rows,
        "nodes": _nodes(controller) if controller is not None else [],
        "endpoints": running.endpoints(client, lab),
        "alert_receiver": alert_receiver(lab),
    }


def alert_receiver(lab: str) -> str:
    """Where the lab's alert receiver listens (inside the Prometheus container, never published) and
    the host file it appends Alertmanager's notifications to."""
    out = contract.alerts_dir(lab) / contract.ALERTS_FILE
    return f"http://127.0.0.1:{contract.ALERT_RECEIVER_PORT} in prometheus → {out}"


def _daemon_states(container: Any, role: str) -> dict[str, str]:
    if container.labels.get(contract.LABEL_BOOT) == "systemd":
        return _unit_states(container, role)
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


SYSTEMD_UNITS_BY_ROLE = {
    **DAEMONS_BY_ROLE,
    "controller": ["munge", "slurmctld", "slurm_exporter"],
    "dbd": ["munge", "mariadb", "slurmdbd"],
    "restd": ["munge", "slurmrestd"],
    "node": ["munge", "slurmd", "dcgm-shim"],
    "prometheus": ["prometheus", "prometheus-alertmanager", "alert-receiver"],
}


def _unit_states(container: Any, role: str) -> dict[str, str]:
    """A machine-like host's units as systemd reports them (active, inactive, failed …)."""
    units = SYSTEMD_UNITS_BY_ROLE.get(role, [])
    result = container.exec_run(["systemctl", "is-active", *units])
    states = result.output.decode(errors="replace").split()
    return dict(zip(units, [*states, *["unknown"] * len(units)], strict=False))


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
