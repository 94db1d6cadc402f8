"""A lab's network is its own even when another lab's name begins with it; listing the labs' containers
survives another lab's container going away meanwhile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors

from lab.bringup import containers
from lab.contract import LABEL_LAB, network_name


@dataclass
class Network:
    name: str


@dataclass
class Networks:
    """The engine's network list: its name filter matches any part of a name, as dockerd's does."""

    existing: list[Network] = field(default_factory=list)

    def list(self, names: list[str]) -> list[Network]:
        return [n for n in self.existing if any(part in n.name for part in names)]

    def create(self, name: str, **_: Any) -> Network:
        self.existing.append(Network(name))
        return self.existing[-1]


@dataclass
class Engine:
    networks: Networks = field(default_factory=Networks)


def test_a_lab_gets_its_network_though_a_longer_name_holds_its_own() -> None:
    engine = Engine(Networks([Network(network_name("runai-scale-check"))]))
    assert containers._ensure_network(engine, "runai-scale") == network_name("runai-scale")  # type: ignore[arg-type]
    assert [n.name for n in engine.networks.existing] == [
        network_name("runai-scale-check"),
        network_name("runai-scale"),
    ]
    containers._ensure_network(engine, "runai-scale")  # type: ignore[arg-type]
    assert len(engine.networks.existing) == 2


class RemovedWhileListing:
    """The engine's low-level API as the SDK's container list meets it when another lab goes down: the
    list names two containers, and the second is gone by the time the SDK inspects it."""

    def containers(self, **_: Any) -> list[dict[str, str]]:
        return [{"Id": "kept"}, {"Id": "removed"}]

    def inspect_container(self, container_id: str) -> dict[str, Any]:
        if container_id == "removed":
            raise docker.errors.NotFound(f"No such container: {container_id}")
        return {
            "Id": container_id,
            "Name": "/lab-default-controller",
            "Config": {"Labels": {LABEL_LAB: "default"}},
        }


def test_a_container_removed_while_listing_is_left_out_not_an_error() -> None:
    client = docker.DockerClient.__new__(docker.DockerClient)  # no engine: only the SDK's list logic
    client.api = RemovedWhileListing()  # type: ignore[assignment]
    assert containers.known_labs(client) == ["default"]
    assert [c.id for c in containers.lab_containers(client, "default")] == ["kept"]
