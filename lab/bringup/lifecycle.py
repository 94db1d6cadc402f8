"""Bring-up and take-down of a lab of any kind: the steps in order, each reading what the one
before made. What a kind renders (:class:`Rendered`) comes from :mod:`lab.kinds`."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from lab import versions
from lab.bringup import containers, daemons, engine, images, keys, lock, provision, ssh
from lab.bringup.container_specs import ContainerSpec
from lab.bringup.provision import ProvisionError, inputs_digest, private_dir, run_playbook, write_hosts
from lab.paths import lab_state_dir, state_root
from lab.progress import Progress


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
    # Extra vars made beside the images and containers (a binary's build): called once they are up,
    # before provisioning; what it raises fails the bring-up like a failed play.
    late_vars: Callable[[], dict[str, Any]] | None = None
    slurm: versions.SlurmRelease = versions.SLURM_RELEASES[versions.DEFAULT_SLURM_SERIES]


def bring_up(
    rendered: Rendered, build: images.BuildOptions, keep_on_failure: bool, progress: Progress
) -> None:
    """The one bring-up of every lab kind: images, containers, Ansible; nothing half-done is left
    behind (a failed provisioning removes the containers unless ``keep_on_failure``)."""
    client = engine.ensure_engine(progress)
    engine.check_disk(state_root())
    state = lab_state_dir(rendered.name)
    if rendered.ssh is None:
        roles = {spec.image_role for spec in rendered.specs}
        images.build_all(client, build, progress, roles, rendered.slurm)
    else:
        images.build_host(client, build, progress)
    for directory in rendered.state_dirs:
        directory.mkdir(parents=True, exist_ok=True)
    with progress.step(f"containers of lab '{rendered.name}'"):
        unchanged = containers.up(client, rendered.name, rendered.specs, progress)
    inventory = rendered.inventory
    if rendered.ssh is not None:
        with progress.step("sshd on every host"):
            inventory = _over_ssh(client, rendered.name, rendered.ssh, inventory)
    private = private_dir(rendered.name)
    hosts = write_hosts(private / "inventory" / "hosts.yml", inventory)
    try:
        extravars = {**rendered.extravars, **(rendered.late_vars() if rendered.late_vars else {})}
        digest = inputs_digest(inventory, extravars)
        same = provision.provisioned_digest(private) == digest
        if unchanged and same and _all_running(client, rendered, progress):
            progress.say("provisioning: nothing changed since the last run (containers, inputs, daemons)")
        else:
            provision.forget_provisioned(private)
            with progress.step("provisioning with Ansible"):
                run_playbook(private, hosts, extravars, progress)
            provision.record_provisioned(private, inventory, extravars)
    except Exception:
        if not keep_on_failure:
            progress.say("bring-up failed: removing the lab's containers (--keep-on-failure keeps them)")
            containers.down(client, rendered.name, purge=False, progress=progress)
        raise
    shutil.copyfile(rendered.blueprint_source, state / "blueprint.yaml")


def _all_running(client: docker.DockerClient, rendered: Rendered, progress: Progress) -> bool:
    """Whether every daemon runs (machine-like hosts are always provisioned again: their units are
    systemd's to restart, and their test path is the full run)."""
    if rendered.ssh is not None:
        return False
    stopped = daemons.not_running(client, rendered.name)
    if stopped:
        progress.say(f"provisioning again: not running: {', '.join(stopped)}")
    return not stopped


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
                raise ProvisionError(f"host '{host}' of lab '{lab}' publishes no SSH port")
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
