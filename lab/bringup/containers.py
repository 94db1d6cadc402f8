"""Containers, network and volumes of one lab, through the docker SDK.

:func:`up` makes the engine match the specs of :mod:`lab.bringup.container_specs` (idempotent: a
container whose spec changed is recreated, a stopped one is started), and :func:`down` removes
everything labelled with the lab's name.
"""

from __future__ import annotations

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from lab import contract
from lab.bringup.container_specs import ContainerSpec
from lab.bringup.ssh import SSH_PORT
from lab.contract import (
    LABEL_BOOT,
    LABEL_HOST,
    LABEL_LAB,
    LABEL_ROLE,
    LABEL_SPEC,
    container_name,
    network_name,
)
from lab.progress import Progress


def up(client: docker.DockerClient, lab: str, specs: list[ContainerSpec], progress: Progress) -> bool:
    """Make the engine match ``specs``; True when every container was already there and running."""
    for sub in (contract.XID_DIR, contract.JOBS_DIR):
        (contract.shared_dir(lab) / sub).mkdir(parents=True, exist_ok=True)
    network = _ensure_network(client, lab)
    for spec in specs:
        for volume in [*spec.volumes, *spec.read_volumes]:
            _ensure_volume(client, lab, volume)
    created = started = kept = 0
    for spec in specs:
        outcome = _ensure_container(client, spec, network)
        created += outcome == "created"
        started += outcome == "started"
        kept += outcome == "kept"
    progress.say(f"containers: {created} created, {started} started, {kept} already running")
    return created == started == 0


def down(client: docker.DockerClient, lab: str, purge: bool, progress: Progress) -> None:
    removed = 0
    for container in lab_containers(client, lab):
        container.remove(force=True, v=True)
        removed += 1
    for network in client.networks.list(filters={"label": f"{LABEL_LAB}={lab}"}):
        network.remove()
    volumes = client.volumes.list(filters={"label": f"{LABEL_LAB}={lab}"}) if purge else []
    for volume in volumes:
        volume.remove(force=True)
    progress.say(f"removed {removed} containers" + (f" and {len(volumes)} volumes" if purge else ""))


def _boot_settings(spec: ContainerSpec) -> dict[str, object]:
    if spec.boot == "systemd":
        # systemd is PID 1 (the image's command) and reaps everything itself.
        return {"init": False, "cap_add": ["SYS_ADMIN"], "environment": {"container": "docker"}}
    # Boots like a host: starts the daemons provisioning enabled (none on the first start), then sleeps;
    # init reaps the daemons Ansible starts with `docker exec`.
    return {"command": ["/usr/local/sbin/lab-daemon", "boot"], "init": True}


def ssh_ports(client: docker.DockerClient, lab: str) -> dict[str, int]:
    """Host name → the loopback port of its sshd, for the lab's machine-like hosts."""
    ports = {}
    for container in lab_containers(client, lab):
        if container.labels.get(LABEL_BOOT) != "systemd":
            continue
        container.reload()
        bindings = container.attrs["NetworkSettings"]["Ports"].get(f"{SSH_PORT}/tcp") or []
        if bindings:
            ports[container.labels[LABEL_HOST]] = int(bindings[0]["HostPort"])
    return ports


def host_kinds(client: docker.DockerClient, lab: str) -> set[str]:
    """How the lab's containers boot: lab-daemon → container, systemd → systemd (machine-like)."""
    boots = {c.labels.get(LABEL_BOOT, "lab-daemon") for c in lab_containers(client, lab)}
    return {"systemd" if boot == "systemd" else "container" for boot in boots}


# The SDK lists containers, then inspects each: a container that another lab's `lab down` removes in
# between answers 404, and a `lab fault` on one lab failed so while a second lab went down.
# ignore_removed drops such a container from the answer instead.
def lab_containers(client: docker.DockerClient, lab: str) -> list[Container]:
    found = client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab}"}, ignore_removed=True)
    return sorted(found, key=lambda c: c.name)


def known_labs(client: docker.DockerClient) -> list[str]:
    listed = client.containers.list(all=True, filters={"label": LABEL_LAB}, ignore_removed=True)
    return sorted({lab for c in listed if (lab := c.labels.get(LABEL_LAB, ""))})


def find_container(client: docker.DockerClient, lab: str, hostname: str) -> Container | None:
    try:
        container = client.containers.get(container_name(lab, hostname))
    except NotFound:
        return None
    return container if container.labels.get(LABEL_LAB) == lab else None


def _ensure_network(client: docker.DockerClient, lab: str) -> str:
    name = network_name(lab)
    # The engine's name filter matches a part of a name: lab-runai-scale finds lab-runai-scale-check.
    if not any(network.name == name for network in client.networks.list(names=[name])):
        client.networks.create(name, driver="bridge", labels={LABEL_LAB: lab})
    return name


def _ensure_volume(client: docker.DockerClient, lab: str, name: str) -> None:
    try:
        client.volumes.get(name)
    except NotFound:
        client.volumes.create(name, labels={LABEL_LAB: lab})


def _ensure_container(client: docker.DockerClient, spec: ContainerSpec, network: str) -> str:
    digest = spec.digest(str(client.images.get(spec.image).id))
    existing = find_container(client, spec.lab, spec.hostname)
    if existing is not None and existing.labels.get(LABEL_SPEC) == digest:
        if existing.status == "running":
            return "kept"
        existing.start()
        return "started"
    if existing is not None:
        existing.remove(force=True)
    client.containers.run(
        spec.image,
        **_boot_settings(spec),
        name=spec.name,
        hostname=spec.hostname,
        detach=True,
        tmpfs=dict(spec.tmpfs),
        network=network,
        # Slurm addresses hosts by name (SlurmctldHost=controller, NodeAddr=rack01 …).
        networking_config={network: client.api.create_endpoint_config(aliases=[spec.hostname])},
        labels={
            LABEL_LAB: spec.lab,
            LABEL_ROLE: spec.role,
            LABEL_HOST: spec.hostname,
            LABEL_SPEC: digest,
            LABEL_BOOT: spec.boot,
        },
        ports={
            **{f"{inner}/tcp": ("127.0.0.1", outer) for inner, outer in spec.ports.items()},
            # sshd of a machine-like host, on a free loopback port (read back by ssh_ports)
            **({f"{SSH_PORT}/tcp": ("127.0.0.1", None)} if spec.boot == "systemd" else {}),
        },
        volumes={
            **{name: {"bind": path, "mode": "rw"} for name, path in spec.volumes.items()},
            **{name: {"bind": path, "mode": "ro"} for name, path in spec.read_volumes.items()},
            **{host: {"bind": path, "mode": "ro"} for host, path in spec.binds.items()},
            **{host: {"bind": path, "mode": "rw"} for host, path in spec.writable_binds.items()},
        },
    )
    return "created"
