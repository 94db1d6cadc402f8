"""HTTP side: one ThreadingHTTPServer per emulated node, serving ``/metrics`` and ``/health``.

Responses as ``internal/pkg/server/server.go`` writes them at 4.6.0-4.8.3 (commit 7ad58324):

- ``/metrics``: 200, ``Content-Type: text/plain; version=0.0.4; charset=utf-8``,
  ``X-Content-Type-Options: nosniff``; on a transform or render error Go's ``http.Error``:
  500, ``text/plain; charset=utf-8``, body ``internal server error\\n``;
- ``/health``: 200, body ``OK``, ``X-Registry-Available: true``;
- ``/``: a small HTML page linking both; anything else 404 ``404 page not found\\n`` (gorilla/mux).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from lab.dcgm.node import EmulatedNode, ScrapeError
from lab.exposition import PROMETHEUS_TEXT_CONTENT_TYPE

PLAIN_TEXT = "text/plain; charset=utf-8"
INDEX_HTML = b"""<html>
\t\t\t<head><title>GPU Exporter</title></head>
\t\t\t<body>
\t\t\t<h1>GPU Exporter</h1>
\t\t\t<p><a href="./metrics">Metrics</a></p>
\t\t\t<p><a href="./health">Health</a></p>
\t\t\t</body>
\t\t\t</html>"""


def parse_listen_address(address: str) -> tuple[str, int]:
    """Go-style ``host:port`` (``:9400``, ``127.0.0.1:9400``, ``[::1]:9400``) -> (host, port)."""
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(
            f"listen address {address!r} must be <HOST>:<PORT> (e.g. :9400, 127.0.0.1:9400, [::1]:9400)"
        )
    return host.strip("[]"), int(port_text)


class ListeningHTTPServer(ThreadingHTTPServer):
    """A threading server on a Go-style listen address (IPv6 when the host is one)."""

    daemon_threads = True

    def __init__(self, address: str, handler: type[BaseHTTPRequestHandler]) -> None:
        host, port = parse_listen_address(address)
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), handler)

    @property
    def listen_address(self) -> str:
        host, port = self.server_address[:2]
        host_text = str(host)
        return f"[{host_text}]:{port}" if ":" in host_text else f"{host_text}:{port}"


class NodeHTTPServer(ListeningHTTPServer):
    def __init__(self, node: EmulatedNode, address: str) -> None:
        self.node = node
        super().__init__(address, MetricsHandler)


class MetricsHandler(BaseHTTPRequestHandler):
    server: NodeHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, as Prometheus expects from a Go exporter
    # Headers and body go out as two writes; with Nagle on, a keep-alive client waits ~40 ms for the
    # second (delayed ACK). Go's net/http sets TCP_NODELAY too.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._dispatch(send_body=True)

    def do_HEAD(self) -> None:
        self._dispatch(send_body=False)

    def _dispatch(self, *, send_body: bool) -> None:
        path = urlsplit(self.path).path
        if path == "/metrics":
            self._metrics(send_body)
        elif path == "/health":
            self._reply(200, PLAIN_TEXT, b"OK", send_body, {"X-Registry-Available": "true"})
        elif path == "/":
            self._reply(200, "text/html; charset=utf-8", INDEX_HTML, send_body)
        else:
            self._reply(404, PLAIN_TEXT, b"404 page not found\n", send_body)

    def _metrics(self, send_body: bool) -> None:
        node = self.server.node
        try:
            body = node.scrape().encode("utf-8")
        except ScrapeError as failure:
            attrs = {"error": str(failure.error)}
            if failure.transformation:
                attrs["transformation"] = failure.transformation
            node.log.error(failure.message, extra={"attrs": attrs})
            self._reply(500, PLAIN_TEXT, b"internal server error\n", send_body)
            return
        self._reply(200, PROMETHEUS_TEXT_CONTENT_TYPE, body, send_body)

    def _reply(
        self,
        status: int,
        content_type: str,
        body: bytes,
        send_body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Access logs stay off, as in the exporter."""


class RunningShim:
    """The servers of one shim process, each on its own thread."""

    def __init__(self, servers: Sequence[NodeHTTPServer]) -> None:
        self.servers = list(servers)
        self._threads = [
            threading.Thread(target=server.serve_forever, name=f"dcgm-{server.node.config.name}", daemon=True)
            for server in self.servers
        ]
        for thread in self._threads:
            thread.start()

    @property
    def addresses(self) -> dict[str, str]:
        """Node name -> actual listen address (port 0 resolved)."""
        return {server.node.config.name: server.listen_address for server in self.servers}

    def shutdown(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join()


def serve(nodes: Sequence[EmulatedNode]) -> RunningShim:
    """Bind every node's listen address, then start serving; a bind failure closes what was bound."""
    servers: list[NodeHTTPServer] = []
    try:
        for node in nodes:
            servers.append(NodeHTTPServer(node, node.config.address))
    except OSError:
        for server in servers:
            server.server_close()
        raise
    return RunningShim(servers)
