#!/usr/bin/python3
"""The lab's Alertmanager webhook receiver: every notification Alertmanager POSTs (its webhook_config
payload, version "4") is appended as one JSON line, with the time it was received, to a file that
`lab alerts` and the tests read.

    python3 alert_receiver.py --listen 127.0.0.1:9095 --out /var/lib/aifactory-lab/alerts/notifications.jsonl

A line (signals/alerts.md lists every field and its source in Alertmanager v0.28.1):

    {"received_at": "2026-12-03T10:40:12.345Z", "notification": {"version": "4", "status": "firing", ...}}

Each line is one write(2) on a descriptor opened with O_APPEND, so a line is never interleaved with
another and a restart never truncates the file. A body that is not such a notification gets 400 and
writes nothing. Standard library only, one file: the role copies it to hosts as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Alertmanager's notify/webhook/webhook.go (v0.28.1): Message{*template.Data, Version "4", GroupKey,
# TruncatedAlerts}; template/template.go: Data's receiver, status, alerts, groupLabels, commonLabels,
# commonAnnotations, externalURL.
WEBHOOK_VERSION = "4"
REQUIRED_FIELDS = ("version", "groupKey", "status", "receiver", "alerts")
MAX_BODY_BYTES = 8 * 1024 * 1024  # far above a notification of max_alerts: 0 for a lab's alert groups


class BadNotification(ValueError):
    """A body that is not an Alertmanager webhook notification; the message says what is wrong."""


def parse_notification(body: bytes) -> dict[str, Any]:
    """The notification in ``body``, checked to be Alertmanager's version-4 webhook payload."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadNotification(f"the body is not JSON: {error}") from None
    if not isinstance(document, dict):
        raise BadNotification("the body is not a JSON object")
    missing = [name for name in REQUIRED_FIELDS if name not in document]
    if missing:
        raise BadNotification(
            f"the body lacks {', '.join(missing)} (Alertmanager's webhook payload has them)"
        )
    if document["version"] != WEBHOOK_VERSION:
        raise BadNotification(
            f"version {document['version']!r}: this receiver reads version {WEBHOOK_VERSION!r}"
        )
    if not isinstance(document["alerts"], list):
        raise BadNotification("alerts is not a list")
    return document


def line_of(notification: dict[str, Any], received_at: datetime) -> bytes:
    """One JSON line: the receive time (UTC, milliseconds) and the notification as Alertmanager sent it."""
    stamp = received_at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    record = {"received_at": stamp, "notification": notification}
    return (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()


class Journal:
    """The notifications file, appended to with one write per line (O_APPEND: never truncated)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, line: bytes) -> None:
        with self._lock:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
            try:
                written = os.write(descriptor, line)
            finally:
                os.close(descriptor)
        if written != len(line):
            raise OSError(f"{self.path}: wrote {written} of {len(line)} bytes")


def handler_for(journal: Journal) -> type[BaseHTTPRequestHandler]:
    class Receiver(BaseHTTPRequestHandler):
        server_version = "aifactory-lab-alert-receiver"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY_BYTES:
                self._answer(400, f"Content-Length {length}: expected 1 to {MAX_BODY_BYTES} bytes")
                return
            try:
                notification = parse_notification(self.rfile.read(length))
            except BadNotification as error:
                self._answer(400, str(error))
                return
            journal.append(line_of(notification, datetime.now(UTC)))
            self._answer(200, "appended")

        def do_GET(self) -> None:
            # A readiness probe for the role and lab-daemon's callers: the path Alertmanager's own uses.
            if self.path == "/-/ready":
                self._answer(200, "ready")
            else:
                self._answer(404, "POST notifications; GET /-/ready")

        def _answer(self, code: int, text: str) -> None:
            body = (text + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            sys.stderr.write(f"{self.log_date_time_string()} {self.address_string()} {format % args}\n")

    return Receiver


def serve(listen: str, out: Path) -> ThreadingHTTPServer:
    """A server bound to ``listen`` (host:port; port 0 picks a free one), not yet serving."""
    host, _, port = listen.rpartition(":")
    out.parent.mkdir(parents=True, exist_ok=True)
    return ThreadingHTTPServer((host, int(port)), handler_for(Journal(out)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:9095", help="host:port (default 127.0.0.1:9095)")
    parser.add_argument("--out", type=Path, required=True, help="the JSON-lines file to append to")
    options = parser.parse_args(argv)
    server = serve(options.listen, options.out)
    print(f"alert receiver on {options.listen}, appending to {options.out}", file=sys.stderr, flush=True)
    server.serve_forever()  # until SIGTERM (lab-daemon, systemd) ends the process
    return 0


if __name__ == "__main__":
    sys.exit(main())
