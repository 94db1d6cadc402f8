"""The daemons each role's container runs, and their states as the container's own supervisor tells
them (lab-daemon, or systemd on a machine-like host): read by `lab status` and by a `lab up` that finds
its lab unchanged."""

from __future__ import annotations

from typing import Any

import docker

from lab import contract
from lab.bringup import containers

DAEMON_COMMAND = "/usr/local/sbin/lab-daemon"
DAEMONS_BY_ROLE = {
    "controller": ["munged", "slurmctld", "slurm_exporter"],
    "dbd": ["munged", "mariadb", "slurmdbd"],
    "restd": ["munged", "slurmrestd"],
    "prometheus": ["prometheus", "alertmanager", "alert-receiver"],
    "runai": ["runai"],
    contract.EGRESS_HOST: ["egress-gateway"],
    contract.CENTRAL_HOST: ["victoria-metrics", "victoria-logs", "vmalert"],
}


RUNNING = ("running", "active")  # lab-daemon's word, systemd's


class DaemonError(RuntimeError):
    """A daemon did not start, stop or restart; the message is the command and what it said."""


def control(container: Any, action: str, daemon: str) -> None:
    """``action`` (start, stop, restart) on one daemon of a running container, through its supervisor:
    lab-daemon, or systemctl on a machine-like host (the daemon's unit has its name)."""
    supervisor = "systemctl" if container.labels.get(contract.LABEL_BOOT) == "systemd" else DAEMON_COMMAND
    command = [supervisor, action, daemon]
    result = container.exec_run(command)
    if result.exit_code != 0:
        output = result.output.decode(errors="replace").strip()
        raise DaemonError(f"`{' '.join(command)}` exited {result.exit_code}: {output}")


def states(container: Any, role: str) -> dict[str, str]:
    """Daemon → its state in one running container of ``role``."""
    if container.labels.get(contract.LABEL_BOOT) == "systemd":
        return _unit_states(container, role)
    names = DAEMONS_BY_ROLE.get(role)
    if names is None:  # node or rack: one slurmd per node name, found from their pid files
        listing = container.exec_run(["sh", "-c", "ls /var/spool/slurm | sed -n 's/^slurmd-//p'"])
        names = ["munged", *[f"slurmd@{n}" for n in listing.output.decode().split()]]
    result = container.exec_run([DAEMON_COMMAND, "status", *names])
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


def not_running(client: docker.DockerClient, lab: str) -> list[str]:
    """``host/daemon`` of every daemon of the lab's containers that does not run (a stopped container's
    whole host), so that a `lab up` that finds nothing else changed still starts what stopped."""
    found = []
    for container in containers.lab_containers(client, lab):
        host = container.labels.get(contract.LABEL_HOST, "")
        if container.status != "running":
            found.append(f"{host}/*")
            continue
        role = container.labels.get(contract.LABEL_ROLE, "")
        found += [f"{host}/{name}" for name, state in states(container, role).items() if state not in RUNNING]
    return found
