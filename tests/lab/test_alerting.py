"""The alert delivery path of the running default lab: Prometheus loads the role's rule files and sends
to Alertmanager, Alertmanager delivers to the lab's receiver, and the receiver's file under
.lab/<lab>/alerts/ holds each notification as one line. The alert is a real one, posted to
Alertmanager's own API as any client may (no lab fault); it is resolved again before the test returns."""

from __future__ import annotations

import json
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab import contract
from lab.blueprint.slurm_blueprint import Blueprint
from lab.paths import ANSIBLE_DIR
from lab.slurm_exporter import upstream_rules

from .conftest import run_lab, wait_for

pytestmark = pytest.mark.lab

RULES = ANSIBLE_DIR / "roles" / "prometheus" / "files" / "rules"
# group_wait 10s for a new group; a group that already notified waits group_interval (1m).
DELIVERY_TIMEOUT_S = 90


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def post_alert(alertmanager: str, labels: dict[str, str], ends: bool = False) -> None:
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    alert = {"labels": labels, "annotations": {"summary": "The lab's alert path check."}, "startsAt": now}
    if ends:
        alert["endsAt"] = now
    request = urllib.request.Request(
        f"{alertmanager}/api/v2/alerts",
        data=json.dumps([alert]).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def notifications(path: Path, check: str, status: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        alerts = record["notification"]["alerts"]
        if record["notification"]["status"] == status and any(
            a["labels"].get("check") == check for a in alerts
        ):
            found.append(record)
    return found


@pytest.fixture(scope="module")
def endpoints(default_lab: Blueprint) -> dict[str, str]:
    return {
        "prometheus": f"http://127.0.0.1:{default_lab.ports.prometheus}",
        "alertmanager": f"http://127.0.0.1:{default_lab.ports.alertmanager}",
    }


def test_alertmanager_is_ready_on_loopback_with_cluster_mode_off(endpoints: dict[str, str]) -> None:
    with urllib.request.urlopen(f"{endpoints['alertmanager']}/-/ready", timeout=10) as response:
        assert response.status == 200
    status = get(f"{endpoints['alertmanager']}/api/v2/status")
    assert status["versionInfo"]["version"] == "0.28.1+ds"  # Debian's build stamps its source version
    assert status["cluster"]["status"] == "disabled"


def test_prometheus_sends_to_the_alertmanager(endpoints: dict[str, str]) -> None:
    data = get(f"{endpoints['prometheus']}/api/v1/alertmanagers")["data"]
    active = [am["url"] for am in data["activeAlertmanagers"]]
    assert active == [f"http://localhost:{contract.ALERTMANAGER_PORT}/api/v2/alerts"]


def test_prometheus_loads_the_slurm_labs_rule_files(endpoints: dict[str, str]) -> None:
    # The site's rules, the egress records the fence sends (signals/egress.md), then the exporter's own
    # alerts.yml and rules.yml as its tag archive has them (signals/alerts.md).
    areas = ("dcgm", "slurm", "targets", "egress-dcgm", "egress-slurm", "egress-targets")
    files = {f"/etc/prometheus/rules/{area}.yml": RULES / f"{area}.yml" for area in areas}
    upstream = upstream_rules.ensure()
    files |= {f"/etc/prometheus/rules/{path.name}": path for path in upstream}
    config = yaml.safe_load(get(f"{endpoints['prometheus']}/api/v1/status/config")["data"]["yaml"])
    assert config["rule_files"] == list(files)
    shipped = {
        (installed, group["name"])
        for installed, path in files.items()
        for group in yaml.safe_load(path.read_text())["groups"] or []
    }
    groups = get(f"{endpoints['prometheus']}/api/v1/rules")["data"]["groups"]
    assert {(group["file"], group["name"]) for group in groups} == shipped
    assert {"slurm.alerts", "slurm.rules"} <= {group["name"] for group in groups}


def _receivers(alertmanager: str, check: str) -> list[str]:
    alerts = get(f"{alertmanager}/api/v2/alerts?filter=check%3D%22{check}%22")
    return sorted(receiver["name"] for alert in alerts for receiver in alert["receivers"])


@pytest.mark.parametrize(("status", "receiver"), [("drained$", "quiet"), ("drained", "lab")])
def test_the_exporters_node_warning_is_quiet_for_a_node_in_maintenance_only(
    default_lab: Blueprint, endpoints: dict[str, str], status: str, receiver: str
) -> None:
    """The site's override beside the exporter's SlurmNodeWarning (lab/bringup/render.py): a node drained
    in a MAINT reservation (sinfo's `$`) goes to the receiver `quiet`; any other drained node is told."""
    check = uuid.uuid4().hex
    labels = {
        "alertname": "SlurmNodeWarning",
        "cluster": default_lab.slurm.cluster_name,
        "node": "dgx-003",
        "status": status,
        "check": check,
    }
    post_alert(endpoints["alertmanager"], labels)
    try:
        routed = wait_for(
            lambda: _receivers(endpoints["alertmanager"], check), 30, f"the alert with check={check}"
        )
        assert routed == [receiver]
    finally:
        post_alert(endpoints["alertmanager"], labels, ends=True)


def test_an_alert_is_delivered_to_the_receivers_file(
    default_lab: Blueprint, endpoints: dict[str, str]
) -> None:
    path = contract.alerts_dir(default_lab.name) / contract.ALERTS_FILE
    check = uuid.uuid4().hex
    labels = {"alertname": "LabAlertPathCheck", "cluster": default_lab.slurm.cluster_name, "check": check}
    post_alert(endpoints["alertmanager"], labels)
    try:
        wait_for(
            lambda: notifications(path, check, "firing"),
            DELIVERY_TIMEOUT_S,
            f"a firing notification with check={check} in {path}",
        )
        record = notifications(path, check, "firing")[0]
        notification = record["notification"]
        assert (notification["version"], notification["receiver"]) == ("4", "lab")
        assert notification["groupLabels"] == {"alertname": "LabAlertPathCheck", "cluster": labels["cluster"]}
        assert [a["labels"] for a in notification["alerts"] if a["labels"].get("check") == check] == [labels]
        assert record["received_at"].endswith("Z")
        shown = json.loads(run_lab("alerts", "--json", "--limit", "1000", "--lab", default_lab.name).stdout)
        assert any(any(a["labels"].get("check") == check for a in d["alerts"]) for d in shown["delivered"]), (
            "lab alerts --json does not list the delivered notification"
        )
    finally:
        post_alert(endpoints["alertmanager"], labels, ends=True)
    # send_resolved: the resolution is delivered too, within the group's interval.
    wait_for(
        lambda: notifications(path, check, "resolved"),
        DELIVERY_TIMEOUT_S,
        f"a resolved notification with check={check} in {path}",
    )
