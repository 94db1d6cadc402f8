"""A small Kubernetes API client on the standard library (the lab's images carry no client library).

It speaks to the API server with a kubeconfig's client certificate, verifies the server against the
lab's CA, and applies objects with server-side apply (``PATCH`` ``application/apply-patch+yaml``,
field manager ``aifactory-lab``), so applying the same object twice changes nothing. Large kinds are
read in pages (``limit`` / ``continue``) and followed with a watch (``watch=1`` from a
``resourceVersion``, with bookmarks): Kubernetes API concepts, "Retrieving large results sets in
chunks" and "Efficient detection of changes".
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

FIELD_MANAGER = "aifactory-lab"
Obj = dict[str, Any]
Objs = list[Obj]  # spelt once here: inside Client, ``list`` is the verb

# Where each kind this lab writes lives in the API (group/version, plural, namespaced).
RESOURCES: dict[str, tuple[str, str, bool]] = {
    "Namespace": ("api/v1", "namespaces", False),
    "Node": ("api/v1", "nodes", False),
    "Pod": ("api/v1", "pods", True),
    "Event": ("api/v1", "events", True),
    "ServiceAccount": ("api/v1", "serviceaccounts", True),
    "ConfigMap": ("api/v1", "configmaps", True),
    "Secret": ("api/v1", "secrets", True),
    "Job": ("apis/batch/v1", "jobs", True),
    "PyTorchJob": ("apis/kubeflow.org/v1", "pytorchjobs", True),
    "ValidatingWebhookConfiguration": (
        "apis/admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        False,
    ),
    "PriorityClass": ("apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "ClusterRole": ("apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "CustomResourceDefinition": (
        "apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        False,
    ),
    "Queue": ("apis/scheduling.run.ai/v2", "queues", False),
    "PodGroup": ("apis/scheduling.run.ai/v2alpha2", "podgroups", True),
    "BindRequest": ("apis/scheduling.run.ai/v1alpha2", "bindrequests", True),
    "Topology": ("apis/kai.scheduler/v1alpha1", "topologies", False),
    "Stage": ("apis/kwok.x-k8s.io/v1alpha1", "stages", False),
}


class ApiError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Client:
    def __init__(self, kubeconfig: Path, server: str | None = None, timeout_s: float = 30.0) -> None:
        config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
        cluster = config["clusters"][0]["cluster"]
        user = config["users"][0]["user"]
        self.server = (server or cluster["server"]).rstrip("/")
        self.timeout_s = timeout_s
        self.context: ssl.SSLContext | None = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode("ascii")
        )
        # ssl loads a client certificate only from files: a private temporary directory, removed at once.
        with tempfile.TemporaryDirectory(prefix="lab-kube-") as tmp:
            cert, key = Path(tmp) / "client.crt", Path(tmp) / "client.key"
            cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
            key.write_bytes(base64.b64decode(user["client-key-data"]))
            self.context.load_cert_chain(cert, key)

    # --- paths --------------------------------------------------------------------------------
    @staticmethod
    def path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
        prefix, plural, namespaced = RESOURCES[kind]
        parts = [prefix]
        if namespaced and namespace:
            parts += ["namespaces", namespace]
        parts.append(plural)
        if name:
            parts.append(name)
        return "/" + "/".join(parts)

    @classmethod
    def plain(cls, server: str, timeout_s: float = 30.0) -> Client:
        """A client of a plain-HTTP server without credentials (the unit tests' fake API server)."""
        client = cls.__new__(cls)
        client.server, client.timeout_s, client.context = server.rstrip("/"), timeout_s, None
        return client

    # --- verbs --------------------------------------------------------------------------------
    def _open(
        self,
        method: str,
        path: str,
        body: bytes | None,
        content_type: str,
        query: dict[str, str] | None,
        timeout_s: float | None = None,
    ) -> Any:
        """The open response of one request; an HTTP error status raises :class:`ApiError`."""
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        req = urllib.request.Request(url, data=body, method=method)
        req.add_header("Accept", "application/json")
        if body is not None:
            req.add_header("Content-Type", content_type)
        try:
            return urllib.request.urlopen(req, context=self.context, timeout=timeout_s or self.timeout_s)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("message", detail)
            raise ApiError(exc.code, f"{method} {path}: {detail}") from None

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        query: dict[str, str] | None = None,
    ) -> Obj:
        with self._open(method, path, body, content_type, query) as response:
            data = response.read()
        return json.loads(data) if data else {}

    def get_text(self, path: str) -> str:
        """A plain-text endpoint, such as the API server's own ``/metrics``."""
        with self._open("GET", path, None, "text/plain", None) as response:
            return str(response.read().decode("utf-8"))

    def get(self, path: str, **query: str) -> Obj:
        return self.request("GET", path, query=query or None)

    def list(self, kind: str, namespace: str | None = None, **query: str) -> list[Obj]:
        items: list[Obj] = self.get(self.path(kind, namespace), **query).get("items", [])
        return items

    def list_paged(
        self, kind: str, namespace: str | None = None, limit: int = 500, **query: str
    ) -> tuple[Objs, str]:
        """Every object of a kind, ``limit`` per request, and the list's ``resourceVersion`` (every
        page is served from one snapshot, so a watch from it misses nothing). A continue token that
        expired between two pages raises :class:`ApiError` 410; the caller lists again."""
        items: Objs = []
        token = ""
        while True:
            page = self.get(
                self.path(kind, namespace),
                **query,
                limit=str(limit),
                **({"continue": token} if token else {}),
            )
            items += page.get("items", []) or []
            meta = page.get("metadata", {})
            token = meta.get("continue", "")
            if not token:
                return items, str(meta.get("resourceVersion", ""))

    def watch(
        self,
        kind: str,
        namespace: str | None = None,
        resource_version: str = "",
        timeout_s: int = 300,
        **query: str,
    ) -> Iterator[Obj]:
        """The watch events (``{"type": ..., "object": ...}``) of a kind after ``resource_version``,
        bookmarks included, until the server ends the watch after ``timeout_s``. An expired
        resourceVersion comes as HTTP 410 or as an ``ERROR`` event whose Status has code 410."""
        query = {
            **query,
            "watch": "1",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_s),
            **({"resourceVersion": resource_version} if resource_version else {}),
        }
        # The server ends the watch; the socket's timeout only catches a server that went silent.
        path = self.path(kind, namespace)
        with self._open("GET", path, None, "application/json", query, timeout_s + self.timeout_s) as response:
            for line in response:
                if line.strip():
                    yield json.loads(line)

    def apply(self, obj: Obj) -> Obj:
        """Server-side apply of one object (created when absent, else made to match)."""
        meta = obj["metadata"]
        path = self.path(obj["kind"], meta.get("namespace"), meta["name"])
        return self.request(
            "PATCH",
            path,
            json.dumps(obj).encode(),
            "application/apply-patch+yaml",
            {"fieldManager": FIELD_MANAGER, "force": "true"},
        )

    def create(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        return self.request("POST", self.path(obj["kind"], meta.get("namespace")), json.dumps(obj).encode())

    def strategic_patch(
        self, kind: str, namespace: str | None, name: str, patch: Obj, status: bool = False
    ) -> Obj:
        """Lists merge by their keys (conditions by type, containerStatuses by name), as kubectl patches."""
        path = self.path(kind, namespace, name) + ("/status" if status else "")
        return self.request(
            "PATCH", path, json.dumps(patch).encode(), "application/strategic-merge-patch+json"
        )

    def merge_patch(
        self, kind: str, namespace: str | None, name: str, patch: Obj, status: bool = False
    ) -> Obj:
        path = self.path(kind, namespace, name) + ("/status" if status else "")
        return self.request("PATCH", path, json.dumps(patch).encode(), "application/merge-patch+json")

    def delete(self, kind: str, namespace: str | None, name: str) -> None:
        try:
            self.request(
                "DELETE", self.path(kind, namespace, name), query={"propagationPolicy": "Background"}
            )
        except ApiError as exc:
            if exc.status != 404:
                raise

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(
                urllib.request.Request(self.server + "/readyz"), context=self.context, timeout=5
            ) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False


def wait_until(check: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.2) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout_s:.0f} s")
        time.sleep(interval_s)


def documents(text: str) -> Iterator[Obj]:
    """The objects of a multi-document YAML text (empty documents skipped)."""
    for document in yaml.safe_load_all(text):
        if document:
            yield document
