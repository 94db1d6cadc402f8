"""What role dcgm_health_check promises on a fresh host serving two Slurm nodes (gpu-01, gpu-02)."""

from __future__ import annotations

import pytest

CHECK = "/usr/local/libexec/dcgm-xid-check"


def test_the_health_check_is_installed(host) -> None:
    script = host.file(CHECK)
    assert script.is_file
    assert script.mode == 0o755
    assert script.user == "root"
    assert script.content_string.startswith("#!/usr/bin/python3")


def test_the_config_names_the_local_exporter_and_this_hosts_nodes(host) -> None:
    config = host.file("/etc/slurm/dcgm-xid-check.conf")
    assert config.mode == 0o644
    lines = [line for line in config.content_string.splitlines() if not line.startswith("#")]
    assert lines == [
        "DCGM_EXPORTER_URL=http://127.0.0.1:9400/metrics",
        # gpu-03 is another host's node: not in this host's map
        "DCGM_EXPORTER_URL_MAP=gpu-01=http://127.0.0.1:9401/metrics,gpu-02=http://127.0.0.1:9402/metrics",
    ]


@pytest.mark.parametrize(
    ("node", "url"),
    [
        ("gpu-01", "http://127.0.0.1:9401/metrics"),
        ("gpu-02", "http://127.0.0.1:9402/metrics"),
        ("gpu-09", "http://127.0.0.1:9400/metrics"),
    ],
)
def test_a_run_reads_its_nodes_exporter_and_never_fails(host, node: str, url: str) -> None:
    # As slurmd runs it: SLURMD_NODENAME only. No exporter listens here, so the run is skipped and
    # logged; a health check that exits non-zero would drain the node for the wrong reason.
    run = host.run(f"env -i SLURMD_NODENAME={node} DCGM_XID_CHECK_LOG=/dev/stdout {CHECK}")
    assert run.rc == 0, run.stderr
    assert f"prog=dcgm-xid-check node={node} url={url} result=skipped " in run.stdout
