"""A running lab, as the commands that work on one see it: its name, kind, blueprint, endpoints and
containers. Made by the lab kinds (:mod:`lab.kinds`) and handed to the workload runner, the churn
report and the capture, so that none of them goes looking for the lab itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import Container

from lab import contract
from lab.attach.slurmrestd import Credentials, issue_token
from lab.bringup import containers
from lab.paths import lab_state_dir

_SERVICE_BY_PORT = {f"{port}/tcp": name for port, name in contract.SERVICE_BY_PORT.items()}


class LabError(RuntimeError):
    """A lab command that cannot go on; the message says why and what to do."""


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
    """Service name → its URL on the host, from the engine's port bindings (127.0.0.1 only)."""
    urls = {}
    for container in containers.lab_containers(client, lab):
        ports = container.attrs.get("NetworkSettings", {}).get("Ports") or {}
        for inner, bindings in sorted(ports.items()):
            for binding in bindings or []:
                host = container.labels[contract.LABEL_HOST]
                if inner == "22/tcp":  # a machine-like host's sshd (key: the lab's keys/ssh/id_ed25519)
                    urls[f"{host} ssh"] = f"ssh://root@{binding['HostIp']}:{binding['HostPort']}"
                    continue
                service = _SERVICE_BY_PORT.get(inner, f"{host}:{inner}")
                urls[service] = f"http://{binding['HostIp']}:{binding['HostPort']}"
    return urls


def recorded_blueprint(lab: str) -> Path:
    """The blueprint a lab was brought up with (kept in its state directory by `lab up`)."""
    path = lab_state_dir(lab) / "blueprint.yaml"
    if not path.exists():
        raise LabError(f"lab '{lab}' has no recorded blueprint ({path}). Fix: `lab up --blueprint FILE`.")
    return path


@dataclass(frozen=True)
class RunningLab:
    name: str
    kind: str  # "slurm" | "runai": the blueprint's `kind:`
    blueprint: Any  # the kind's validated blueprint model
    endpoints: dict[str, str]
    client: docker.DockerClient = field(repr=False)

    @property
    def state_dir(self) -> Path:
        return lab_state_dir(self.name)

    @property
    def prometheus_url(self) -> str:
        return self._endpoint("prometheus")

    @property
    def slurmrestd_url(self) -> str:
        return self._endpoint("slurmrestd")

    @property
    def job_classes_path(self) -> Path:
        """Where the workload runner keeps the job classes the shim reads (SHARED_MOUNT on the nodes)."""
        return contract.shared_dir(self.name) / contract.JOB_CLASSES

    def container(self, host: str) -> Container | None:
        return containers.find_container(self.client, self.name, host)

    def controller(self) -> Container:
        found = self.container("controller")
        if found is None or found.status != "running":
            raise LabError(f"lab '{self.name}' has no running controller. Fix: `lab up`.")
        return found

    def token(self, user: str, lifespan_s: int = 3600) -> Credentials:
        """A slurmrestd JWT for ``user``, signed by the lab's slurmctld."""
        return issue_token(self.controller(), user, lifespan_s)

    def _endpoint(self, service: str) -> str:
        url = self.endpoints.get(service)
        if url is None:
            raise LabError(f"lab '{self.name}' publishes no {service} port. Fix: `lab up` again.")
        return url


def attach(client: docker.DockerClient, name: str, kind: str, blueprint: Any) -> RunningLab:
    return RunningLab(name, kind, blueprint, endpoints(client, name), client)
