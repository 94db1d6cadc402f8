"""What role prometheus promises on a fresh systemd host: Debian's packages at the lab's pins, running
the rendered configuration with the given scrape jobs and rule files, Alertmanager beside it and the
alert receiver delivering to its file (the running daemons are asked, not only the files)."""

from __future__ import annotations

import json
import time
import uuid

import yaml

BASE = "http://127.0.0.1:9090"
ALERTMANAGER = "http://127.0.0.1:9093"
JOBS = {"prometheus", "alertmanager", "slurm", "dcgm", "runai"}
AREAS = ("dcgm", "slurm", "runai")
NOTIFICATIONS = "/var/lib/aifactory-lab/alerts/notifications.jsonl"


def get(host, path: str, base: str = BASE) -> tuple[int, str]:
    """GET <base><path> from inside the host (it has python3, no curl)."""
    script = (
        "import json, urllib.request; "
        f"r = urllib.request.urlopen('{base}{path}', timeout=10); "
        "print(json.dumps([r.status, r.read().decode()]))"
    )
    status, body = json.loads(host.check_output(f'python3 -c "{script}"'))
    return status, body


def api(host, path: str):
    status, body = get(host, path)
    assert status == 200
    return json.loads(body)["data"]


def test_the_pinned_package_is_installed(host) -> None:
    assert host.package("prometheus").version == "2.53.3+ds1-2"


def test_the_unit_is_enabled_and_active(host) -> None:
    unit = host.service("prometheus")
    assert unit.is_enabled
    assert unit.is_running


def test_ready(host) -> None:
    status, body = get(host, "/-/ready")
    assert status == 200
    assert "Ready" in body


def test_the_config_file_is_checked_and_readable_by_prometheus_only(host) -> None:
    config = host.file("/etc/prometheus/prometheus.yml")
    assert (config.user, config.group, config.mode) == ("root", "prometheus", 0o640)
    assert "SUCCESS" in host.check_output("promtool check config /etc/prometheus/prometheus.yml 2>&1")


def test_the_daemon_runs_the_roles_flags(host) -> None:
    flags = api(host, "/api/v1/status/flags")
    assert flags["config.file"] == "/etc/prometheus/prometheus.yml"
    assert flags["storage.tsdb.path"] == "/var/lib/prometheus/metrics2"
    assert flags["storage.tsdb.retention.time"] == "15d"
    assert flags["web.listen-address"] == "0.0.0.0:9090"
    assert flags["web.enable-lifecycle"] == "true"
    tsdb = host.file("/var/lib/prometheus/metrics2")
    assert (tsdb.user, tsdb.group, tsdb.mode) == ("prometheus", "prometheus", 0o750)


def test_the_loaded_config_has_the_cluster_label_and_the_given_jobs(host) -> None:
    loaded = yaml.safe_load(api(host, "/api/v1/status/config")["yaml"])
    assert loaded["global"]["external_labels"] == {"cluster": "molecule"}
    assert loaded["global"]["scrape_interval"] == "15s"
    jobs = {job["job_name"]: job for job in loaded["scrape_configs"]}
    assert set(jobs) == JOBS
    assert jobs["runai"]["metrics_path"] == "/api/metrics"
    assert jobs["dcgm"]["static_configs"] == [
        {"targets": ["rack-01:9401"], "labels": {"instance": "gpu-01:9400"}},
        {"targets": ["rack-01:9402"], "labels": {"instance": "gpu-02:9400"}},
    ]


def test_the_targets_keep_the_instance_labels(host) -> None:
    targets = api(host, "/api/v1/targets")["activeTargets"]
    assert {(t["scrapePool"], t["labels"]["instance"], t["scrapeUrl"]) for t in targets} == {
        ("prometheus", "localhost:9090", "http://localhost:9090/metrics"),
        ("alertmanager", "localhost:9093", "http://localhost:9093/metrics"),
        ("slurm", "controller:9341", "http://controller:9341/metrics"),
        ("dcgm", "gpu-01:9400", "http://rack-01:9401/metrics"),
        ("dcgm", "gpu-02:9400", "http://rack-01:9402/metrics"),
        ("runai", "runai:9590", "http://runai:9590/api/metrics"),
    }


def test_prometheus_scrapes_itself(host) -> None:
    deadline = time.monotonic() + 45  # the first scrape comes within one 15 s interval
    while True:
        result = api(host, "/api/v1/query?query=up%7Bjob%3D%22prometheus%22%7D")["result"]
        if result and result[0]["value"][1] == "1":
            assert result[0]["metric"]["instance"] == "localhost:9090"
            return
        assert time.monotonic() < deadline, f"up{{job='prometheus'}} is not 1 after 45 s: {result}"
        time.sleep(1)


def test_the_pinned_alertmanager_is_installed_and_its_unit_active(host) -> None:
    assert host.package("prometheus-alertmanager").version == "0.28.1+ds-1"
    for unit in ("prometheus-alertmanager", "alert-receiver"):
        assert host.service(unit).is_enabled, unit
        assert host.service(unit).is_running, unit


def test_alertmanager_runs_the_checked_config_with_cluster_mode_off(host) -> None:
    config = host.file("/etc/prometheus/alertmanager.yml")
    assert (config.user, config.group, config.mode) == ("root", "prometheus", 0o640)
    assert "SUCCESS" in host.check_output("amtool check-config /etc/prometheus/alertmanager.yml 2>&1")
    status, body = get(host, "/api/v2/status", ALERTMANAGER)
    assert status == 200
    loaded = json.loads(body)
    assert loaded["cluster"]["status"] == "disabled"
    route = yaml.safe_load(loaded["config"]["original"])["route"]
    assert (route["group_wait"], route["group_interval"], route["repeat_interval"]) == ("10s", "1m", "1h")


def test_prometheus_sends_to_alertmanager_and_loads_every_rule_file(host) -> None:
    active = api(host, "/api/v1/alertmanagers")["activeAlertmanagers"]
    assert [am["url"] for am in active] == ["http://localhost:9093/api/v2/alerts"]
    loaded = yaml.safe_load(api(host, "/api/v1/status/config")["yaml"])
    assert loaded["rule_files"] == [f"/etc/prometheus/rules/{area}.yml" for area in AREAS]
    for area in AREAS:
        rules = host.file(f"/etc/prometheus/rules/{area}.yml")
        assert (rules.user, rules.group, rules.mode) == ("root", "prometheus", 0o640)


def test_an_alert_is_delivered_to_the_receivers_file(host) -> None:
    check = uuid.uuid4().hex
    alert = json.dumps([{"labels": {"alertname": "MoleculeCheck", "check": check}}])
    script = (
        "import urllib.request; "
        f"r = urllib.request.Request('{ALERTMANAGER}/api/v2/alerts', data={alert!r}.encode(), "
        "headers={'Content-Type': 'application/json'}); "
        "print(urllib.request.urlopen(r, timeout=10).status)"
    )
    assert host.check_output("python3 -c %s", script) == "200"  # testinfra quotes the argument
    deadline = time.monotonic() + 60  # group_wait is 10s
    while True:
        lines = (
            host.file(NOTIFICATIONS).content_string.splitlines() if host.file(NOTIFICATIONS).exists else []
        )
        found = [json.loads(line) for line in lines if check in line]
        if found:
            assert found[0]["notification"]["version"] == "4"
            assert found[0]["notification"]["receiver"] == "lab"
            return
        assert time.monotonic() < deadline, f"no notification with {check} in {NOTIFICATIONS} after 60 s"
        time.sleep(1)
