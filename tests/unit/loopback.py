"""A test's HTTP server on an ephemeral loopback port, served from a thread for one ``with`` block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer


@contextmanager
def serving(server: HTTPServer) -> Iterator[str]:
    """Serve ``server`` until the block ends; yields its base URL (http://127.0.0.1:PORT)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
