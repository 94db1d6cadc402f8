"""A running lab's status: its containers with their daemons, Slurm's node states and the endpoints,
as `lab status` prints them."""

from __future__ import annotations

from typing import Any

import docker

from lab import contract
from lab.attach import running
from lab.bringup import containers
from lab.bringup import daemons as daemons_of


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
            daemons = daemons_of.states(container, role)
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
