"""One kind's objects kept current by a paged list and then a watch, as client-go's reflector keeps
an informer's store: the driver reads its pods, workloads and events from memory instead of listing
them from the API server every tick.

The list (``limit`` / ``continue``) returns a ``resourceVersion``; the watch goes on from it, and every
``ADDED``/``MODIFIED``/``DELETED`` event and every ``BOOKMARK`` moves it on. When the server ends a
watch (``timeoutSeconds``) the next one starts from the last resourceVersion; when that version is
too old for the server (HTTP 410 Gone, or an ``ERROR`` event with code 410) the kind is listed again
(Kubernetes API concepts, "Efficient detection of changes" and "Watch bookmarks").
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from lab.kube.api import ApiError, Client

log = logging.getLogger("lab.kube.reflector")
Obj = dict[str, Any]
GONE = 410  # the resourceVersion is older than the server keeps: list again
PAGE_LIMIT = 500  # objects per list request (the API server's own paged lists use 500 too)
WATCH_TIMEOUT_S = 300  # the server ends each watch after this; the next one continues from its version
RETRY_S = 1.0  # after a failed list or watch (API server restarting, connection reset)


class Gone(Exception):
    """The watch's resourceVersion expired: the kind must be listed again."""


class Reflector:
    """The objects of ``kind`` (optionally of one namespace, with a label selector), by uid.
    :meth:`step` does one list or one watch; :meth:`start` runs steps on a thread until :meth:`stop`.
    With ``keep_changes`` every object added or changed since the last :meth:`changes` is kept for
    it (the driver's events.jsonl)."""

    def __init__(
        self,
        client: Client,
        kind: str,
        namespace: str | None = None,
        label_selector: str = "",
        keep_changes: bool = False,
        page_limit: int = PAGE_LIMIT,
        watch_timeout_s: int = WATCH_TIMEOUT_S,
    ) -> None:
        self.client, self.kind, self.namespace = client, kind, namespace
        self.query = {"labelSelector": label_selector} if label_selector else {}
        self.keep_changes, self.page_limit, self.watch_timeout_s = keep_changes, page_limit, watch_timeout_s
        self.resource_version = ""
        self.lists = 0  # full lists so far: one at the start, one per expired resourceVersion
        self.synced = threading.Event()  # set once the first list is in
        self._store: dict[str, Obj] = {}
        self._changed: list[Obj] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- what the driver reads -------------------------------------------------------------------
    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._store.values())

    def changes(self) -> list[Obj]:
        """The objects added or changed since the last call, in the order the server sent them."""
        with self._lock:
            changed, self._changed = self._changed, []
        return changed

    # --- one step --------------------------------------------------------------------------------
    def step(self) -> None:
        """List when there is no resourceVersion to go on from, else watch until the server ends it."""
        if not self.resource_version:
            self.relist()
            return
        try:
            self.watch()
        except Gone:
            log.info("%s: resourceVersion %s expired, listing again", self.kind, self.resource_version)
            self.resource_version = ""

    def relist(self) -> None:
        items, version = self.client.list_paged(self.kind, self.namespace, self.page_limit, **self.query)
        fresh = {obj["metadata"]["uid"]: obj for obj in items}
        with self._lock:
            if self.keep_changes:
                self._changed += [
                    obj for uid, obj in fresh.items() if _version(self._store.get(uid)) != _version(obj)
                ]
            self._store = fresh
        self.resource_version = version
        self.lists += 1
        self.synced.set()

    def watch(self) -> None:
        try:
            events = self.client.watch(
                self.kind, self.namespace, self.resource_version, self.watch_timeout_s, **self.query
            )
            for event in events:
                self._apply(event)
                if self._stop.is_set():
                    return
        except ApiError as error:
            if error.status == GONE:
                raise Gone from None
            raise

    def _apply(self, event: Obj) -> None:
        kind, obj = event.get("type"), event.get("object", {})
        if kind == "ERROR":
            if obj.get("code") == GONE:
                raise Gone
            raise ApiError(int(obj.get("code", 500)), f"watch {self.kind}: {obj.get('message', obj)}")
        version = _version(obj)
        if kind in ("ADDED", "MODIFIED"):
            with self._lock:
                self._store[obj["metadata"]["uid"]] = obj
                if self.keep_changes:
                    self._changed.append(obj)
        elif kind == "DELETED":
            with self._lock:
                self._store.pop(obj["metadata"]["uid"], None)
        if version:  # BOOKMARK carries only this
            self.resource_version = version

    # --- the thread ------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"reflector-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except (ApiError, OSError, ValueError) as error:
                log.warning("%s: %s; again in %.0f s", self.kind, error, RETRY_S)
                self._stop.wait(RETRY_S)


def _version(obj: Obj | None) -> str:
    return str((obj or {}).get("metadata", {}).get("resourceVersion", ""))
