"""The default blueprint on machine-like hosts (`lab up --hosts systemd`): systemd as PID 1, provisioning
over SSH only, Debian's packages installed by the roles; a GPU job's prolog writes the mapping files, the
shim labels the job, the exporter answers, a second converge changes nothing and a changed value restarts
only its readers.

The blueprint is blueprints/default.yaml as shipped, renamed and on other host ports so it runs beside
the container-native default lab (and, under `just test`, beside the default lab's tests).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
import testinfra
import yaml
from testinfra.host import Host

from lab import contract, promql
from lab.blueprint.slurm_blueprint import Blueprint, load
from lab.bringup import containers, daemons, ssh
from lab.contract import JOB_MAPPING_DIR
from lab.paths import ANSIBLE_DIR, lab_state_dir

from .conftest import derived_blueprint, run_lab, running_job_gpus, submit_gpu_job, wait_for

pytestmark = pytest.mark.lab

LAB = "machines"
# Every host's units, as `lab status` names them (tests below check each one's MainPID).
UNITS = daemons.SYSTEMD_UNITS_BY_ROLE
# What reads slurm.conf (and so restarts when one of its values changes); everything else keeps running.
SLURM_CONF_READERS = {"slurmctld", "slurmd", "slurmrestd"}


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Blueprint, Path, float]]:
    """The lab on systemd hosts, brought up from nothing; yields (blueprint, its file, bring-up seconds)."""
    path = derived_blueprint(tmp_path_factory.mktemp("machines") / "machines.yaml", LAB)
    run_lab("down", "--lab", LAB, "--purge", check=False)
    started = time.monotonic()
    run_lab("up", "--blueprint", str(path), "--hosts", "systemd", "--no-workload")
    seconds = time.monotonic() - started
    yield load(path), path, seconds
    run_lab("down", "--lab", LAB, "--purge")


def _host(name: str) -> Host:
    """An observer's view of one host (docker exec); provisioning itself used only SSH."""
    return testinfra.get_host(f"docker://{contract.container_name(LAB, name)}")


def _role(blueprint: Blueprint, name: str) -> str:
    return "node" if name in blueprint.nodes.names else name


def _main_pids(blueprint: Blueprint) -> dict[tuple[str, str], int]:
    pids = {}
    for name in ["controller", "dbd", "restd", "prometheus", *blueprint.nodes.names]:
        for unit in UNITS[_role(blueprint, name)]:
            shown = _host(name).check_output(f"systemctl show --property=MainPID --value {unit}")
            pids[(name, unit)] = int(shown)
    return pids


def _recap() -> dict[str, int]:
    recap = json.loads((lab_state_dir(LAB) / "ansible" / "recap.json").read_text())
    return dict(recap["changed"])


def test_every_host_boots_systemd_with_no_lab_daemon(
    engine: docker.DockerClient, machines: tuple[Blueprint, Path, float]
) -> None:
    blueprint, _, _ = machines
    found = containers.lab_containers(engine, LAB)
    assert {c.labels[contract.LABEL_BOOT] for c in found} == {"systemd"}
    assert len(found) == 4 + len(blueprint.nodes.names)
    for container in found:
        host = _host(container.labels[contract.LABEL_HOST])
        assert host.file("/proc/1/comm").content_string.strip() == "systemd"
        assert host.run("systemctl is-system-running").stdout.strip() == "running"
        assert not host.file("/usr/local/sbin/lab-daemon").exists


def test_provisioning_reached_the_hosts_only_over_ssh_with_the_labs_keys(
    machines: tuple[Blueprint, Path, float],
) -> None:
    inventory = yaml.safe_load((lab_state_dir(LAB) / "ansible" / "inventory" / "hosts.yml").read_text())
    variables = inventory["all"]["vars"]
    assert variables["ansible_connection"] == "ssh"
    assert "StrictHostKeyChecking=yes" in variables["ansible_ssh_common_args"]
    keys = ssh.SshKeys(lab_state_dir(LAB) / "keys" / "ssh")
    private = [keys.client_key, *(keys.host_key(h) for h in ("controller", "dbd", "dgx-001"))]
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o400 for path in private)
    # The known_hosts entries are the keys each host's sshd presents: strict checking passed with them.
    controller = _host("controller")
    served = controller.check_output("cat /etc/ssh/ssh_host_ed25519_key.pub").split()[1]
    assert served in keys.known_hosts.read_text()
    assert (
        controller.check_output(f"cat {ssh.AUTHORIZED_KEYS_MOUNT}")
        == Path(f"{keys.client_key}.pub").read_text().strip()
    )


def test_the_host_image_holds_no_ssh_key(
    engine: docker.DockerClient, machines: tuple[Blueprint, Path, float]
) -> None:
    found = engine.containers.run(
        contract.role_image("host"),
        [
            "sh",
            "-c",
            "find / -xdev \\( -name 'ssh_host_*' -o -name authorized_keys -o -name 'id_*' \\) -print",
        ],
        remove=True,
    ).decode()
    assert found == "", f"SSH keys in the host image: {found}"


def test_daemons_are_debian_units_enabled_and_active(machines: tuple[Blueprint, Path, float]) -> None:
    blueprint, _, _ = machines
    for name in ["controller", "dbd", "restd", "prometheus", *blueprint.nodes.names]:
        host = _host(name)
        for unit in UNITS[_role(blueprint, name)]:
            assert host.service(unit).is_running, f"{name}: {unit} not active"
            assert host.service(unit).is_enabled, f"{name}: {unit} not enabled at boot"
    # Installed by the roles from Debian's archive at the pinned version, not found in an image.
    packages = _host("dgx-001").check_output("dpkg-query -W -f '${Version}' slurmd")
    assert packages == contract.ansible_vars()["lab_contract"]["packages"]["slurm"]


def test_a_gpu_job_is_mapped_labelled_and_scraped(machines: tuple[Blueprint, Path, float]) -> None:
    blueprint, _, _ = machines
    controller = _host("controller")
    job = submit_gpu_job(controller, "--gres=gpu:2", 120)
    try:
        node, gpus = running_job_gpus(controller, job, timeout_s=90)
        mapped = _host(node).check_output(f"grep -lx {job} {JOB_MAPPING_DIR}/* || true").split()
        assert {path.rsplit("/", 1)[1] for path in mapped} == gpus

        prometheus = f"http://127.0.0.1:{blueprint.ports.prometheus}"

        def labelled() -> set[tuple[str, str]]:
            series = promql.query(prometheus, f'DCGM_FI_DEV_GPU_UTIL{{hpc_job="{job}"}}')
            return {(s.labels["instance"], s.labels["gpu"]) for s in series}

        wanted = {(f"{node}:9400", gpu) for gpu in gpus}
        assert wait_for(lambda: labelled() == wanted and labelled(), 90, "hpc_job series") == wanted
        # The pinned exporter, scraped by Prometheus: the job's node is mixed (2 of its 8 GPUs in use).
        mixed = 'sum(slurm_nodes_mix{job="slurm", partition="gpu"})'
        wait_for(lambda: [s for s in promql.query(prometheus, mixed) if s.value >= 1], 90, "a mixed node")
    finally:
        controller.run(f"scancel {job}")
    with urllib.request.urlopen(
        f"http://127.0.0.1:{blueprint.ports.slurm_exporter}/metrics", timeout=30
    ) as answer:
        assert answer.status == 200
        assert b"slurm_nodes_idle" in answer.read()


def test_a_second_converge_changes_nothing(machines: tuple[Blueprint, Path, float]) -> None:
    blueprint, path, _ = machines
    before = _main_pids(blueprint)
    run_lab("up", "--blueprint", str(path), "--hosts", "systemd", "--no-workload")
    assert _recap() == {host: 0 for host in _recap()}
    assert len(_recap()) == 4 + len(blueprint.nodes.names)
    assert _main_pids(blueprint) == before


def test_a_changed_slurm_value_restarts_only_the_daemons_that_read_it(
    machines: tuple[Blueprint, Path, float], tmp_path: Path
) -> None:
    blueprint, _, _ = machines
    before = _main_pids(blueprint)
    changed = derived_blueprint(
        tmp_path / "machines.yaml", LAB, max_job_count=blueprint.slurm.max_job_count + 1
    )
    run_lab("up", "--blueprint", str(changed), "--hosts", "systemd", "--no-workload")
    after = _main_pids(blueprint)
    restarted = {key for key in before if after[key] != before[key]}
    expected = {key for key in before if key[1] in SLURM_CONF_READERS}
    assert restarted == expected
    shown = _host("controller").check_output("scontrol show config")
    assert re.search(rf"MaxJobCount\s+=\s+{blueprint.slurm.max_job_count + 1}\b", shown)


def test_a_dry_run_shows_a_change_and_makes_none(
    machines: tuple[Blueprint, Path, float], tmp_path: Path
) -> None:
    """`--check --diff`, as docs/real-clusters.md tells a site to preview a change: the diff of the
    rendered slurm.conf is shown, nothing on any host changes."""
    private = lab_state_dir(LAB) / "ansible"
    extravars = yaml.safe_load((private / "env" / "extravars").read_text())
    extravars["slurm_config"] = {"SlurmctldTimeout": 121}
    extra = tmp_path / "extravars.json"
    extra.write_text(json.dumps(extravars))
    before = _host("controller").file("/etc/slurm/slurm.conf").content_string
    playbook = ["ansible-playbook", "-i", str(private / "inventory" / "hosts.yml"), "-e", f"@{extra}"]
    result = subprocess.run(
        [*playbook, "--check", "--diff", str(ANSIBLE_DIR / "site.yml")],
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg")},
        check=False,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "+SlurmctldTimeout=121" in result.stdout
    assert _host("controller").file("/etc/slurm/slurm.conf").content_string == before
