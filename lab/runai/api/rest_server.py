"""The lab's Run:ai API over HTTP: a thread in the driver, JSON answers from :class:`RestApi`.

Published on the host's 127.0.0.1 only (``lab status`` lists it as ``runai-rest``).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from lab.dcgm.shim import ListeningHTTPServer
from lab.runai.api.routes import Answer, RestApi

MAX_BODY_BYTES = 64 * 1024  # a token request is a few hundred bytes


class _Handler(BaseHTTPRequestHandler):
    server: RestServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        self._answer(self.server.api.handle("GET", self.path, self._headers()))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            body = {"code": 400, "message": f"request body over {MAX_BODY_BYTES} bytes", "details": ""}
            self._answer(Answer(400, body))
            return
        self._answer(self.server.api.handle("POST", self.path, self._headers(), self.rfile.read(length)))

    def _headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _answer(self, answer: Answer) -> None:
        data = json.dumps(answer.body).encode()
        self.send_response(answer.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """No access log."""


class RestServer(ListeningHTTPServer):
    def __init__(self, api: RestApi, address: str) -> None:
        self.api = api
        super().__init__(address, _Handler)


def serve(api: RestApi, address: str) -> RestServer:
    """Serve ``api`` on ``address`` from a daemon thread; the caller shuts it down."""
    server = RestServer(api, address)
    threading.Thread(target=server.serve_forever, name="runai-rest", daemon=True).start()
    return server
