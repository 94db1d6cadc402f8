"""Containers, network and volumes of one lab, through the docker SDK.

:func:`plan` is pure: blueprint → the containers the lab needs. :func:`up` makes the engine match
that plan (idempotent: a container whose spec changed is recreated, a stopped one is started), and
:func:`down` removes everything labelled with the lab's name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from lab.bringup.images import role_image
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.spec.slurm_blueprint import Blueprint

LABEL_LAB = "org.aifactory-lab.lab"
LABEL_ROLE = "org.aifactory-lab.role"
LABEL_HOST = "org.aifactory-lab.host"
LABEL_SPEC = "org.aifactory-lab.spec"
RESTD_PORT = 6820  # slurmrestd listens here inside its container
PROMETHEUS_PORT = 9090
SLURM_EXPORTER_PORT = 9341  # the exporter's default :9341, Prometheus' registered Slurm exporter port
SHARED_MOUNT = "/var/lib/aifactory-lab/shared"


def shared_dir(lab: str) -> Path:
    return lab_state_dir(lab) / "shared"


@dataclass(frozen=True)
class ContainerSpec:
    """One container: its host name on the lab network is also its Ansible inventory name."""

    lab: str
    hostname: str
    role: str  # controller | dbd | restd | node | rack
    nodes: tuple[str, ...] = ()  # Slurm node names whose slurmd runs here
    ports: dict[int, int] = field(default_factory=dict)  # container port → host port on 127.0.0.1
    volumes: dict[str, str] = field(default_factory=dict)  # volume name → mount point
    binds: dict[str, str] = field(default_factory=dict)  # host path → mount point (read-only)
    writable_binds: dict[str, str] = field(default_factory=dict)  # host path → mount point

    @property
    def name(self) -> str:
        return container_name(self.lab, self.hostname)

    @property
    def image(self) -> str:
        return role_image("node" if self.role == "rack" else self.role)

    def digest(self, image_id: str) -> str:
        payload = json.dumps({**asdict(self), "image_id": image_id}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def prometheus_spec(lab: str, host_port: int) -> ContainerSpec:
    return ContainerSpec(
        lab,
        "prometheus",
        "prometheus",
        ports={PROMETHEUS_PORT: host_port},
        volumes={f"lab-{lab}-prometheus": "/var/lib/prometheus/metrics2"},
    )


def container_name(lab: str, hostname: str) -> str:
    return f"lab-{lab}-{hostname}"


def network_name(lab: str) -> str:
    return f"lab-{lab}"


def plan(blueprint: Blueprint) -> list[ContainerSpec]:
    lab = blueprint.name
    # Host → nodes, read-only: XID faults (`lab fault`) and job classes (the workload runner).
    shared = {str(shared_dir(lab)): SHARED_MOUNT}
    specs = [
        ContainerSpec(
            lab,
            "controller",
            "controller",
            ports={SLURM_EXPORTER_PORT: blueprint.ports.slurm_exporter},
            volumes={f"lab-{lab}-ctld": "/var/spool/slurm/ctld"},
        ),
        ContainerSpec(lab, "dbd", "dbd", volumes={f"lab-{lab}-mariadb": "/var/lib/mysql"}),
        ContainerSpec(lab, "restd", "restd", ports={RESTD_PORT: blueprint.ports.slurmrestd}),
        prometheus_spec(lab, blueprint.ports.prometheus),
    ]
    if blueprint.racks:
        specs += [
            ContainerSpec(lab, rack, "rack", nodes=tuple(members), binds=shared)
            for rack, members in blueprint.racks.items()
        ]
    else:
        specs += [
            ContainerSpec(lab, node, "node", nodes=(node,), binds=shared) for node in blueprint.nodes.names
        ]
    return specs


def up(client: docker.DockerClient, lab: str, specs: list[ContainerSpec], progress: Progress) -> None:
    for sub in ("xid", "jobs"):
        (shared_dir(lab) / sub).mkdir(parents=True, exist_ok=True)
    network = _ensure_network(client, lab)
    for spec in specs:
        for volume in spec.volumes:
            _ensure_volume(client, lab, volume)
    created = started = kept = 0
    for spec in specs:
        outcome = _ensure_container(client, spec, network)
        created += outcome == "created"
        started += outcome == "started"
        kept += outcome == "kept"
    progress.say(f"containers: {created} created, {started} started, {kept} already running")


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


def lab_containers(client: docker.DockerClient, lab: str) -> list[Container]:
    found = client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab}"})
    return sorted(found, key=lambda c: c.name)


def known_labs(client: docker.DockerClient) -> list[str]:
    labs = {
        c.labels.get(LABEL_LAB, "") for c in client.containers.list(all=True, filters={"label": LABEL_LAB})
    }
    return sorted(lab for lab in labs if lab)


def find_container(client: docker.DockerClient, lab: str, hostname: str) -> Container | None:
    try:
        container = client.containers.get(container_name(lab, hostname))
    except NotFound:
        return None
    return container if container.labels.get(LABEL_LAB) == lab else None


def _ensure_network(client: docker.DockerClient, lab: str) -> str:
    name = network_name(lab)
    if not client.networks.list(names=[name]):
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
        command=["sleep", "infinity"],
        name=spec.name,
        hostname=spec.hostname,
        detach=True,
        init=True,  # reaps the daemons Ansible starts with `docker exec`
        network=network,
        # Slurm addresses hosts by name (SlurmctldHost=controller, NodeAddr=rack01 …).
        networking_config={network: client.api.create_endpoint_config(aliases=[spec.hostname])},
        labels={LABEL_LAB: spec.lab, LABEL_ROLE: spec.role, LABEL_HOST: spec.hostname, LABEL_SPEC: digest},
        ports={f"{inner}/tcp": ("127.0.0.1", outer) for inner, outer in spec.ports.items()},
        volumes={
            **{name: {"bind": path, "mode": "rw"} for name, path in spec.volumes.items()},
            **{host: {"bind": path, "mode": "ro"} for host, path in spec.binds.items()},
            **{host: {"bind": path, "mode": "rw"} for host, path in spec.writable_binds.items()},
        },
    )
    return "created"
