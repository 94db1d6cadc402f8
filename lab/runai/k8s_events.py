"""Kubernetes events in the core/v1 ``Event`` shape, correlated the way client-go records them.

Shape and naming from client-go ``tools/record/event.go`` (``makeEvent``/``generateEvent``): name
``<involvedObject.name>.<unix nanos in hex>``, namespace of the object, ``metadata.annotations`` for
``AnnotatedEventf`` (KAI's Evict event), ``firstTimestamp``/``lastTimestamp``, ``count`` 1,
``source{component,host}``, ``reportingComponent``/``reportingInstance`` copied from the source.
client-go's EventCorrelator turns a repeat of the same (object, type, reason, message, source) into
an update of the existing event (``count`` + 1, new ``lastTimestamp``); every create or update is one
JSON line, as ``kubectl get events -w -o json`` would show it. client-go's spam filter
(``EventSourceObjectSpamFilter``: a token bucket of 25 events, refilled one per 300 s, per source and
involved object) drops what a busy scheduler would otherwise repeat every session.

Reasons and messages are sourced in :data:`EVENT_SOURCES` (KAI v0.13.0, Kubernetes).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# (component, reason) -> upstream file that records it; the test keeps emitted reasons inside this.
EVENT_SOURCES: dict[tuple[str, str], str] = {
    (
        "scheduler",
        "Scheduled",
    ): "NVIDIA/KAI-Scheduler pkg/scheduler/cache/status_updater/default_status_updater.go Bound",
    ("scheduler", "Unschedulable"): "NVIDIA/KAI-Scheduler default_status_updater.go markTaskUnschedulable / "
    "markPodGroupUnschedulable",
    ("scheduler", "Evict"): "NVIDIA/KAI-Scheduler default_status_updater.go Evicted (AnnotatedEventf)",
    (
        "binder",
        "Bound",
    ): "NVIDIA/KAI-Scheduler pkg/binder/controllers/bindrequest_controller.go updatePodCondition",
    (
        "kubelet",
        "Killing",
    ): "kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer",
    ("kubelet", "BackOff"): "kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go doBackOff",
}

# KAI status updater annotation keys on the Evict event (default_status_updater.go constants).
NUM_EVICTED_PODS = "num-evicted-pods"
EVICTOR_ACTION_TYPE = "evictor-action-type"
EVICTOR_PODGROUP_NAME = "evictor-pod-group-name"
EVICTOR_PODGROUP_NAMESPACE = "evictor-pod-group-namespace"

SPAM_BURST = 25  # client-go tools/record events_cache.go defaultSpamBurst
SPAM_REFILL_S = 300.0  # defaultSpamQPS = 1/300

POD_API = "v1"
PODGROUP_API = "scheduling.run.ai/v2alpha2"  # KAI PodGroup CRD group/version


def rfc3339(epoch: float) -> str:
    """metav1.Time JSON form: RFC 3339, second precision, UTC ``Z``."""
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class ObjectRef:
    kind: str
    namespace: str
    name: str
    uid: str
    api_version: str
    field_path: str = ""

    def as_json(self) -> dict[str, str]:
        out = {
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "apiVersion": self.api_version,
        }
        if self.field_path:
            out["fieldPath"] = self.field_path
        return out


@dataclass(slots=True)
class EventLog:
    """Records events; ``sink`` receives each JSON line (create or update) as it happens."""

    clock: Callable[[], float]
    sink: Callable[[str], None] | None = None
    by_key: dict[tuple[str, str, str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    lines: int = 0
    # Per involved-object uid: the events about it (for the control-plane API's workload events).
    by_object: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    dropped: int = 0
    buckets: dict[tuple[str, ...], tuple[float, float]] = field(default_factory=dict)

    def _allow(self, obj: ObjectRef, component: str, host: str, now: float) -> bool:
        key = (component, host, obj.kind, obj.namespace, obj.name, obj.uid, obj.api_version)
        tokens, last = self.buckets.get(key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + (now - last) / SPAM_REFILL_S)
        if tokens < 1.0:
            self.buckets[key] = (tokens, now)
            return False
        self.buckets[key] = (tokens - 1.0, now)
        return True

    def record(
        self,
        obj: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        component: str,
        host: str = "",
        annotations: dict[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """Record (or count up) one event; None when the spam filter drops it."""
        now = self.clock()
        if not self._allow(obj, component, host, now):
            self.dropped += 1
            return None
        key = (obj.uid, event_type, reason, message, component, host)
        event = self.by_key.get(key)
        if event is None:
            nanos = int(now * 1e9)
            meta: dict[str, Any] = {
                "name": f"{obj.name}.{nanos:x}",
                "namespace": obj.namespace or "default",
                "creationTimestamp": rfc3339(now),
            }
            if annotations:
                meta["annotations"] = dict(sorted(annotations.items()))
            source = {"component": component, **({"host": host} if host else {})}
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": meta,
                "involvedObject": obj.as_json(),
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": rfc3339(now),
                "lastTimestamp": rfc3339(now),
                "count": 1,
                "type": event_type,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": host,
            }
            self.by_key[key] = event
            self.by_object.setdefault(obj.uid, []).append(event)
        else:
            event["count"] += 1
            event["lastTimestamp"] = rfc3339(now)
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        self.lines += 1
        if self.sink is not None:
            self.sink(json.dumps(event, separators=(",", ":")))
        return event

    def forget(self, uid: str) -> None:
        """Drop correlation state of a deleted object (its events stay in the sink)."""
        for event in self.by_object.pop(uid, []):
            obj = event["involvedObject"]
            key = (
                obj["uid"],
                event["type"],
                event["reason"],
                event["message"],
                event["source"]["component"],
                event["source"].get("host", ""),
            )
            self.by_key.pop(key, None)
        for bucket in [k for k in self.buckets if k[5] == uid]:
            del self.buckets[bucket]
