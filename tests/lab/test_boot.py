"""Containers boot like hosts: `docker restart` of any Slurm container brings its daemons back in
order without `lab up`, and a node's job-mapping directory comes back empty (the dcgm_job_mapping
role's tmpfiles.d entry, applied at boot), so no GPU is labelled with a job that died with the node.

Each restart and the planted mapping file are faults of the lab's fault record: a test returns only
once Prometheus has scraped every target up again after it, so no later window sees them."""

from __future__ import annotations

import time
from collections.abc import Callable

import docker
import pytest
from testinfra.host import Host

from lab import contract, promql
from lab.attach import fault_record
from lab.blueprint.slurm_blueprint import Blueprint
from lab.bringup import containers
from lab.paths import DEFAULT_BLUEPRINT

from .conftest import all_scraped_up_since, run_lab, wait_for

pytestmark = pytest.mark.lab

BOOTED_DAEMONS = {
    "dbd": ["munged", "mariadb", "slurmdbd"],
    "controller": ["munged", "slurmctld", "slurm_exporter"],
    "restd": ["munged", "slurmrestd"],
    "central": ["victoria-metrics", "victoria-logs", "vmalert"],
    "egress": ["egress-gateway"],
}


def _restart(engine: docker.DockerClient, lab: Blueprint, hostname: str) -> None:
    container = containers.find_container(engine, lab.name, hostname)
    assert container is not None
    container.restart(timeout=10)


def _settle(lab: Blueprint, since: float) -> bool:
    """Wait until Prometheus scraped every target up after ``since``; True for the fault record."""
    prometheus = f"http://127.0.0.1:{lab.ports.prometheus}"
    wait_for(lambda: all_scraped_up_since(prometheus, since), 90, "every target scraped up again")
    return True


def _running(host: Host, daemons: list[str]) -> bool:
    states = host.run("/usr/local/sbin/lab-daemon status " + " ".join(daemons)).stdout.split("\n")
    return all(line.endswith(" running") for line in states if line)


def _in_service(controller: Host, node: str) -> bool:
    states = controller.run(f"sinfo --noheader --Node --nodes={node} --format=%T").stdout.split()
    return bool(states) and states[0] in ("idle", "mixed", "allocated")  # a line per partition


def test_a_node_boots_with_its_daemons_and_an_empty_mapping_directory(
    engine: docker.DockerClient,
    default_lab: Blueprint,
    host: Callable[[str], Host],
    request: pytest.FixtureRequest,
) -> None:
    node = "dgx-004"  # in service; no test job is left on it (the fixtures cancel theirs)
    mapping = f"{contract.JOB_MAPPING_DIR}/7"
    by = request.node.nodeid
    with fault_record.fault(
        default_lab.name, "node-restart", node, by, "a stale job id 999999 on GPU 7"
    ) as fault:
        host(node).check_output(f"echo 999999 >{mapping}")  # a job that died with the node
        boot_log_lines = len(host(node).run("cat /var/log/lab-boot.log").stdout.splitlines())
        _restart(engine, default_lab, node)
        restarted = time.time()
        wait_for(
            lambda: _running(host(node), ["munged", f"slurmd@{node}", "dcgm-shim"]), 60, f"{node}'s daemons"
        )
        wait_for(lambda: _in_service(host("controller"), node), 60, f"{node} back in service")
        assert host(node).run(f"cat {mapping}").stdout.strip() == ""
        fault.settled = _settle(default_lab, restarted)
    prometheus = f"http://127.0.0.1:{default_lab.ports.prometheus}"
    assert not promql.query(prometheus, '{hpc_job="999999"}'), "the stale job id is still served"
    booted = host(node).check_output("cat /var/log/lab-boot.log").splitlines()[boot_log_lines:]
    started = [line.split()[-1] for line in booted if " started " in line]
    assert started == ["munged", f"slurmd@{node}", "dcgm-shim"], booted
    assert (
        host(node).file("/etc/tmpfiles.d/dcgm-job-mapping.conf").contains(f"^D! {contract.JOB_MAPPING_DIR} ")
    )


@pytest.mark.parametrize("hostname", list(BOOTED_DAEMONS))
def test_service_containers_boot_with_their_daemons_in_order(
    engine: docker.DockerClient,
    default_lab: Blueprint,
    host: Callable[[str], Host],
    hostname: str,
    request: pytest.FixtureRequest,
) -> None:
    with fault_record.fault(default_lab.name, "host-restart", hostname, request.node.nodeid) as fault:
        _restart(engine, default_lab, hostname)
        restarted = time.time()
        wait_for(lambda: _running(host(hostname), BOOTED_DAEMONS[hostname]), 60, f"{hostname}'s daemons")
        fault.settled = _settle(default_lab, restarted)
    *_, shut_down, booted = host(hostname).check_output("cat /var/log/lab-boot.log").split(" boot\n")
    daemons = BOOTED_DAEMONS[hostname]
    assert [line.split()[-1] for line in booted.splitlines() if " started " in line] == daemons
    # The stop before it was a host's shutdown: every daemon stopped, in reverse boot order (the
    # exporter ignores SIGTERM, lab-daemon's comment says why, so it is killed after 5 s).
    stopped = [
        line.split()[2]
        for line in shut_down.splitlines()
        if line.startswith(("changed: stopped ", "changed: killed "))
    ]
    assert stopped == daemons[::-1], shut_down
    controller = host("controller")
    wait_for(lambda: controller.run("scontrol ping").stdout.count("is UP") == 1, 60, "slurmctld UP")
    wait_for(lambda: controller.run("sacct -n -X -S now-1hours -o JobID | head -1").rc == 0, 60, "accounting")


def test_lab_up_on_an_unchanged_lab_skips_provisioning_and_a_stopped_daemon_makes_it_provision_again(
    host: Callable[[str], Host], default_lab: Blueprint, request: pytest.FixtureRequest
) -> None:
    """The warm `lab up` (BENCHMARKS.md, "bring-up"): nothing changed, so Ansible does not run; a daemon
    that stopped is something changed, and the next `lab up` provisions and starts it again."""
    run_lab("up", "--blueprint", str(DEFAULT_BLUEPRINT), "--no-workload")  # whatever earlier tests changed
    unchanged = run_lab("up", "--blueprint", str(DEFAULT_BLUEPRINT), "--no-workload")
    assert "provisioning: nothing changed since the last run" in unchanged.stderr
    assert "provisioning with Ansible" not in unchanged.stderr
    restd = host("restd")
    since = time.time()
    with fault_record.fault(
        default_lab.name, "daemon-stopped", "restd/slurmrestd", request.node.nodeid
    ) as fault:
        assert restd.run("/usr/local/sbin/lab-daemon stop slurmrestd").rc == 0
        assert not _running(restd, ["slurmrestd"])
        repaired = run_lab("up", "--blueprint", str(DEFAULT_BLUEPRINT), "--no-workload")
        assert "provisioning again: not running: restd/slurmrestd" in repaired.stderr
        assert "provisioning with Ansible: done" in repaired.stderr
        assert _running(restd, ["slurmrestd"])
        fault.settled = _settle(default_lab, since)
