"""The lab's running egress gateway, from the host: restarted after a key rotation, since the collector
reads its key (``hmac_key: ${file:…}``) once, when it starts."""

from __future__ import annotations

import docker
from docker.errors import NotFound

from lab import contract
from lab.bringup import daemons, engine
from lab.egress.fence import GATEWAY_HOST

DAEMON = "egress-gateway"


class GatewayError(RuntimeError):
    """The gateway did not restart; the message names the container and what it said."""


def restart(lab: str, client: docker.DockerClient | None = None) -> bool:
    """Restart lab ``lab``'s gateway with the key on disk now; False when no gateway runs (the lab is
    down, or its blueprint has egress off: the next `lab up` starts it with that key)."""
    client = client or engine.engine_client()
    if client is None:
        return False
    name = contract.container_name(lab, GATEWAY_HOST)
    try:
        container = client.containers.get(name)
    except NotFound:
        return False
    if container.status != "running":
        return False
    try:
        daemons.control(container, "restart", DAEMON)
    except daemons.DaemonError as error:
        raise GatewayError(f"{name}: {error}") from None
    return True
