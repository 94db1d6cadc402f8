"""HTTP side: one ThreadingHTTPServer per emulated node, serving ``/metrics`` and ``/health``.

Responses as ``internal/pkg/server/server.go@4.5.3-4.8.2`` and Go's ``net/http`` write them:

- ``/metrics``: 200, ``Content-Type: text/plain; charset=utf-8`` (the handler sets only
  ``X-Content-Type-Options: nosniff``, :250; net/http sniffs the type), no ``version=`` parameter;
  ``Content-Length`` up to 2048 bytes, chunked above (net/http's buffer before chunking); on a
  transform error Go's ``http.Error``: 500, ``text/plain; charset=utf-8``, ``internal server error\\n``;
- ``/health``: 200, body ``OK``, ``X-Registry-Available: true`` (:342-367);
- ``/``: a small HTML page linking both (:77-103); anything else 404 ``404 page not found\\n``
  (gorilla/mux). The routes take every method (no ``.Methods()``); no ``Server`` header.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from lab.dcgm.node import EmulatedNode, ScrapeError

PLAIN_TEXT = "text/plain; charset=utf-8"
CHUNKING_THRESHOLD = 2048  # net/http bufferBeforeChunkingSize: larger bodies go out chunked
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

    # gorilla/mux routes without .Methods() answer any method the same way.
    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

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
            # Mapping-file bytes that are not UTF-8 go out as read (surrogateescape), as Go's do.
            body = node.scrape().encode("utf-8", errors="surrogateescape")
        except ScrapeError as failure:
            node.log.error(failure.message, extra={"attrs": failure.attrs})
            self._reply(500, PLAIN_TEXT, b"internal server error\n", send_body)
            return
        self._reply(200, PLAIN_TEXT, body, send_body)

    def _reply(
        self,
        status: int,
        content_type: str,
        body: bytes,
        send_body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response_only(status)  # no Server header: Go sends none
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Type", content_type)
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        chunked = len(body) > CHUNKING_THRESHOLD
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body) if chunked else body)

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
