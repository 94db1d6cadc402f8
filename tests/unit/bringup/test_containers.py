"""A lab's network is its own even when another lab's name begins with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lab.bringup import containers
from lab.contract import network_name


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
