"""A fake API server on loopback for one kind (pods): paged lists and scripted watches, as the real one
answers them (Kubernetes API concepts: ``limit``/``continue``, ``watch=1`` from a ``resourceVersion``,
bookmarks, 410 Gone). Every request's query is recorded for the tests to check."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

Obj = dict[str, Any]


def pod(name: str, version: int, phase: str = "Pending") -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "runai-team-a",
            "uid": f"uid-{name}",
            "resourceVersion": str(version),
        },
        "status": {"phase": phase},
    }


def event(kind: str, obj: Obj) -> Obj:
    return {"type": kind, "object": obj}


def bookmark(version: int) -> Obj:
    return event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": str(version)}})


def gone(version: int) -> Obj:
    """What the server sends on a watch whose resourceVersion it no longer keeps."""
    status = {
        "kind": "Status",
        "status": "Failure",
        "reason": "Expired",
        "code": 410,
        "message": f"too old resource version: {version}",
    }
    return event("ERROR", status)


@dataclass
class FakeApi:
    """The pods a list returns (at ``version``), and the watch events per starting resourceVersion;
    a watch from a version in ``expired`` is refused with HTTP 410."""

    pods: list[Obj] = field(default_factory=list)
    version: int = 1
    watches: dict[str, list[Obj]] = field(default_factory=dict)
    expired: set[str] = field(default_factory=set)
    expired_tokens: set[str] = field(default_factory=set)
    requests: list[dict[str, str]] = field(default_factory=list)

    def answer(self, query: dict[str, str]) -> tuple[int, bytes]:
        self.requests.append(query)
        if query.get("watch") == "1":
            start = query.get("resourceVersion", "")
            if start in self.expired:
                return 410, json.dumps(gone(int(start))["object"]).encode()
            lines = [json.dumps(e) for e in self.watches.get(start, [])]
            return 200, "".join(line + "\n" for line in lines).encode()
        token = query.get("continue", "")
        if token in self.expired_tokens:
            return 410, json.dumps({"kind": "Status", "code": 410, "message": "continue expired"}).encode()
        offset = int(token or 0)
        limit = int(query.get("limit", len(self.pods) or 1))
        page = self.pods[offset : offset + limit]
        meta: Obj = {"resourceVersion": str(self.version)}
        if offset + limit < len(self.pods):
            meta["continue"] = str(offset + limit)
        return 200, json.dumps({"kind": "PodList", "metadata": meta, "items": page}).encode()


class FakeApiServer(HTTPServer):
    def __init__(self, api: FakeApi) -> None:
        self.api = api
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: FakeApiServer

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        assert url.path == "/api/v1/pods", url.path
        status, body = self.server.api.answer(dict(urllib.parse.parse_qsl(url.query)))
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()  # no length: the body ends when the connection closes, as a watch's does
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """No access log."""
