"""What role slurm_exporter promises on a fresh systemd host with the Slurm client and no slurmctld.

Every Slurm command the exporter runs fails here ("Could not establish a configuration source"); v1.8.4
still answers /metrics, with its own series only (signals/slurm.md, Known defects: #138).
"""

from __future__ import annotations

import json

import pytest

PORT = 9341
COLLECTORS = 15  # v1.8.4's default set (signals/slurm.md)


def get(host, path: str) -> tuple[int, str]:
    """GET http://127.0.0.1:9341<path> from inside the host (it has python3, no curl)."""
    script = (
        "import json, urllib.request; "
        f"r = urllib.request.urlopen('http://127.0.0.1:{PORT}{path}', timeout=10); "
        "print(json.dumps([r.status, r.read().decode()]))"
    )
    status, body = json.loads(host.check_output(f'python3 -c "{script}"'))
    return status, body


def samples(body: str) -> dict[str, float]:
    """series -> value of an exposition body, e.g. 'slurm_jobs_running 0' -> {'slurm_jobs_running': 0.0}."""
    pairs = (line.rsplit(" ", 1) for line in body.splitlines() if line and not line.startswith("#"))
    return {series: float(value) for series, value in pairs}


def test_the_binary_is_the_pinned_release(host) -> None:
    binary = host.file("/usr/local/bin/slurm_exporter")
    assert binary.mode == 0o755
    assert "version 1.8.4 " in host.check_output("/usr/local/bin/slurm_exporter --version 2>&1")


def test_the_flags_file(host) -> None:
    flags = host.file("/etc/default/slurm_exporter").content_string
    assert 'ARGS="--web.listen-address=:9341 --command.timeout=5s --log.level=info"\n' in flags


def test_the_unit_is_enabled_and_active_as_its_own_user(host) -> None:
    unit = host.service("slurm_exporter")
    assert unit.is_enabled
    assert unit.is_running
    assert host.user("slurm-exporter").uid == 993
    show = host.check_output("systemctl show -p User -p TimeoutStopUSec -p NRestarts slurm_exporter")
    assert sorted(show.splitlines()) == ["NRestarts=0", "TimeoutStopUSec=5s", "User=slurm-exporter"]


@pytest.mark.parametrize(("path", "body"), [("/healthz", "ok"), ("/", "Slurm Exporter")])
def test_the_other_endpoints_answer(host, path: str, body: str) -> None:
    status, text = get(host, path)
    assert status == 200
    assert body in text


def test_metrics_answers_without_a_controller(host) -> None:
    status, body = get(host, "/metrics")
    assert status == 200
    values = samples(body)
    success = {
        series: value
        for series, value in values.items()
        if series.startswith("slurm_exporter_collector_success")
    }
    # 1 although each collector's command failed: it turns 0 only when a collector panics (#138)
    assert len(success) == COLLECTORS
    assert set(success.values()) == {1.0}
    # the commands did run, and failed
    assert values['slurm_exporter_command_errors_total{command="sinfo"}'] > 0
    assert values['slurm_exporter_command_errors_total{command="squeue"}'] > 0
    # the queue collector emits its global totals at 0; nothing comes from nodes or partitions
    assert values["slurm_jobs_running"] == 0
    assert not [series for series in values if series.startswith(("slurm_node", "slurm_partition"))]
