"""What fired and what was delivered, as records and as text (pure but for reading the file).

Firing alerts come from Prometheus' /api/v1/alerts (one object per alert: ``labels``, ``annotations``,
``state`` pending|firing, ``activeAt``, ``value``). Deliveries are the alert receiver's lines
(lab/alert_receiver.py), each ``{"received_at": ..., "notification": <Alertmanager's webhook payload>}``;
signals/alerts.md lists their fields and sources.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


class AlertsError(RuntimeError):
    """The alerts cannot be read; the message names the file or endpoint and the fix."""


@dataclass(frozen=True)
class Firing:
    """One alert of an alerting rule, as Prometheus holds it now."""

    name: str
    state: str  # pending | firing
    active_at: str
    labels: dict[str, str]


@dataclass(frozen=True)
class Delivered:
    """One webhook notification, as the receiver got it."""

    received_at: str
    status: str  # firing | resolved: the group's status when Alertmanager sent it
    receiver: str
    group_labels: dict[str, str]
    alerts: list[dict[str, Any]]  # each: status, labels, startsAt, endsAt (Alertmanager's names)


def firing_from(api_alerts: list[dict[str, Any]]) -> list[Firing]:
    """Prometheus' /api/v1/alerts objects, newest activeAt first."""
    found = [
        Firing(
            name=alert["labels"].get("alertname", ""),
            state=alert["state"],
            active_at=alert.get("activeAt", ""),
            labels={k: v for k, v in alert["labels"].items() if k != "alertname"},
        )
        for alert in api_alerts
    ]
    return sorted(found, key=lambda f: f.active_at, reverse=True)


def read_delivered(path: Path) -> list[Delivered]:
    """The receiver's file, newest first; no file yet is no delivery yet."""
    if not path.exists():
        return []
    found = []
    with path.open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                found.append(_delivered(path, number, line))
    return sorted(found, key=lambda d: d.received_at, reverse=True)


def _delivered(path: Path, number: int, line: str) -> Delivered:
    try:
        record = json.loads(line)
        notification = record["notification"]
        return Delivered(
            received_at=record["received_at"],
            status=notification["status"],
            receiver=notification["receiver"],
            group_labels=notification.get("groupLabels") or {},
            alerts=[
                {
                    "status": alert["status"],
                    "labels": alert["labels"],
                    "startsAt": alert.get("startsAt", ""),
                    "endsAt": alert.get("endsAt", ""),
                }
                for alert in notification["alerts"]
            ],
        )
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise AlertsError(
            f"{path}:{number}: not a line of the alert receiver ({type(error).__name__}: {error}). "
            "Fix: move the file aside; the receiver starts a new one with the next notification."
        ) from None


def _labels(labels: dict[str, Any]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def as_text(firing: list[Firing], delivered: list[Delivered], prometheus: str, path: Path, limit: int) -> str:
    lines = [f"pending or firing now ({prometheus}/api/v1/alerts), newest first:"]
    if not firing:
        lines.append("  none: no alerting rule is pending or firing")
    for alert in firing[:limit]:
        lines.append(f"  {alert.active_at}  {alert.state:<8} {alert.name}  {_labels(alert.labels)}")
    if len(firing) > limit:
        lines.append(f"  … {len(firing) - limit} more (--limit)")
    lines.append(f"delivered by Alertmanager ({path}), newest first:")
    if not delivered:
        lines.append("  none yet: Alertmanager has sent no notification to the lab's receiver")
    for note in delivered[:limit]:
        lines.append(
            f"  {note.received_at}  {note.status:<8} receiver={note.receiver}  "
            f"group {_labels(note.group_labels)}  {len(note.alerts)} alert(s)"
        )
        for delivered_alert in note.alerts:
            labels = delivered_alert["labels"]
            rest = {k: v for k, v in labels.items() if k != "alertname"}
            lines.append(
                f"      {delivered_alert['status']:<8} {labels.get('alertname', '')}  {_labels(rest)}  "
                f"startsAt {delivered_alert['startsAt']}"
            )
    if len(delivered) > limit:
        lines.append(f"  … {len(delivered) - limit} more (--limit)")
    return "\n".join(lines)


def as_json(firing: list[Firing], delivered: list[Delivered], limit: int) -> str:
    return json.dumps(
        {
            "firing": [asdict(f) for f in firing[:limit]],
            "delivered": [asdict(d) for d in delivered[:limit]],
        },
        indent=2,
    )
