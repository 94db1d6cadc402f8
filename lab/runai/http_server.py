"""HTTP side of ``lab runai serve``: one server for the cluster families, KAI shards and the API,
plus one lab.dcgm target per emulated node, and the thread that steps the simulation.

Paths on ``--address``:

- ``/metrics``: runai_* (docs 2.18), kube-state-metrics series, runai_node_nodepool;
- ``/kai/<nodepool>/metrics``: one KAI scheduler shard (scheduler + queue-controller families);
- ``/api/v1/workloads/telemetry``, ``/api/v1/nodes/telemetry``, ``/api/v1/workloads/<id>/events``;
- ``/health``.

DCGM targets: each node's lab.dcgm ``EmulatedNode`` on its own port (``--dcgm-address``), serving
``/metrics`` exactly as the shim does. All state is read and stepped under one lock.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lab.dcgm.shim import ListeningHTTPServer, RunningShim
from lab.dcgm.shim import serve as serve_dcgm
from lab.exposition import PROMETHEUS_TEXT_CONTENT_TYPE as PROMETHEUS_TEXT
from lab.runai import telemetry
from lab.runai.headless import kai_metrics, main_metrics
from lab.runai.simulation import Simulation

_EVENTS = re.compile(r"^/api/v1/workloads/([0-9a-f-]{36})/events$")
_KAI = re.compile(r"^/kai/([a-z0-9-]+)/metrics$")


class RunaiHTTPServer(ListeningHTTPServer):
    def __init__(self, sim: Simulation, lock: threading.Lock, address: str) -> None:
        self.sim = sim
        self.lock = lock
        super().__init__(address, RunaiHandler)


class RunaiHandler(BaseHTTPRequestHandler):
    server: RunaiHTTPServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; without TCP_NODELAY a small body waits for the client's
    # delayed ACK (~40 ms) on keep-alive connections.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        sim = self.server.sim
        try:
            with self.server.lock:
                if url.path == "/metrics":
                    self._send(200, PROMETHEUS_TEXT, main_metrics(sim).encode())
                    return
                if url.path == "/health":
                    self._send(200, "text/plain; charset=utf-8", b"OK")
                    return
                kai = _KAI.match(url.path)
                if kai and kai.group(1) in sim.shards:
                    self._send(200, PROMETHEUS_TEXT, kai_metrics(sim, kai.group(1)).encode())
                    return
                body = self._api(sim, url.path, query)
        except telemetry.ApiError as error:
            self._json(error.status, error.body())
            return
        if body is None:
            self._send(404, "text/plain; charset=utf-8", b"404 page not found\n")
        else:
            self._json(200, body)

    def _api(self, sim: Simulation, path: str, query: dict[str, list[str]]) -> dict[str, Any] | None:
        if path == "/api/v1/workloads/telemetry":
            return telemetry.workloads_telemetry(sim, query)
        if path == "/api/v1/nodes/telemetry":
            return telemetry.nodes_telemetry(sim, query)
        events = _EVENTS.match(path)
        if events:
            return telemetry.workload_events(sim, events.group(1), query)
        return None

    def _json(self, status: int, body: dict[str, Any]) -> None:
        self._send(status, "application/json", json.dumps(body).encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """No access log."""


class RunningConstruct:
    """The HTTP servers and the stepping thread; ``stop()`` ends all of them."""

    def __init__(
        self,
        sim: Simulation,
        address: str,
        *,
        wall_seconds_per_step: float,
        on_step: Callable[[Simulation], None] | None = None,
    ) -> None:
        self.sim = sim
        self.lock = threading.Lock()
        self.http = RunaiHTTPServer(sim, self.lock, address)
        try:
            self.dcgm: RunningShim = serve_dcgm(list(sim.dcgm.nodes.values()))
        except OSError:
            self.http.server_close()
            raise
        self._stop = threading.Event()
        self._wall = wall_seconds_per_step
        self._on_step = on_step
        self._threads = [
            threading.Thread(target=self.http.serve_forever, name="runai-http", daemon=True),
            threading.Thread(target=self._loop, name="runai-steps", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._wall):
            with self.lock:
                self.sim.step()
                if self._on_step is not None:
                    self._on_step(self.sim)

    @property
    def address(self) -> str:
        return self.http.listen_address

    @property
    def dcgm_addresses(self) -> dict[str, str]:
        return self.dcgm.addresses

    def stop(self) -> None:
        self._stop.set()
        self.http.shutdown()
        self.http.server_close()
        self.dcgm.shutdown()
        for thread in self._threads:
            thread.join()
