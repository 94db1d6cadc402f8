"""What role prometheus promises on a fresh systemd host: Debian's package at the lab's pin, running
the rendered configuration with the given scrape jobs (the running daemon is asked, not only the file)."""

from __future__ import annotations

import json
import time

import yaml

BASE = "http://127.0.0.1:9090"
JOBS = {"prometheus", "slurm", "dcgm", "runai"}


def get(host, path: str) -> tuple[int, str]:
    """GET http://127.0.0.1:9090<path> from inside the host (it has python3, no curl)."""
    script = (
        "import json, urllib.request; "
        f"r = urllib.request.urlopen('{BASE}{path}', timeout=10); "
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
