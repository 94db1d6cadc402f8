"""Restarting the lab's running gateway after a key rotation, through the container's own supervisor."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from docker.errors import NotFound

from lab import contract
from lab.egress import gateway


@dataclass
class _Result:
    exit_code: int
    output: bytes = b""


@dataclass
class _Container:
    status: str = "running"
    labels: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    ran: list[list[str]] = field(default_factory=list)

    def exec_run(self, command: list[str]) -> _Result:
        self.ran.append(command)
        return _Result(self.exit_code, b"lab-daemon: egress-gateway failed to start")


class _Client:
    def __init__(self, container: _Container | None) -> None:
        self.container = container
        self.containers = self

    def get(self, name: str) -> Any:
        if self.container is None or name != contract.container_name("default", "egress"):
            raise NotFound(name)
        return self.container


def test_a_running_gateway_is_restarted_by_its_containers_supervisor() -> None:
    container = _Container()
    assert gateway.restart("default", _Client(container)) is True  # type: ignore[arg-type]
    assert container.ran == [["/usr/local/sbin/lab-daemon", "restart", "egress-gateway"]]


def test_on_a_machine_like_host_systemd_restarts_it() -> None:
    container = _Container(labels={contract.LABEL_BOOT: "systemd"})
    assert gateway.restart("default", _Client(container)) is True  # type: ignore[arg-type]
    assert container.ran == [["systemctl", "restart", "egress-gateway"]]


@pytest.mark.parametrize("container", [None, _Container(status="exited")])
def test_no_running_gateway_is_nothing_to_restart(container: _Container | None) -> None:
    assert gateway.restart("default", _Client(container)) is False  # type: ignore[arg-type]


def test_a_failed_restart_names_the_container_and_what_it_said() -> None:
    with pytest.raises(gateway.GatewayError, match=r"lab-default-egress: .* exited 1: .*failed to start"):
        gateway.restart("default", _Client(_Container(exit_code=1)))  # type: ignore[arg-type]
