"""Machine-like hosts (`lab up --hosts systemd`) against container-native ones, from the same blueprint:
their container specs, the inventory variables that differ per kind of host, and the shim's archive."""

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from lab import contract
from lab.blueprint.slurm_blueprint import load
from lab.bringup import container_specs, images
from lab.bringup.container_specs import ContainerSpec
from lab.bringup.render import inventory
from lab.paths import DEFAULT_BLUEPRINT

LAB_VARIABLES = (
    "slurm_use_cgroups",
    "slurm_declare_node_shape",
    "lab_fake_gpus",
    "slurm_install_packages",
    "prometheus_install_package",
    "ansible_connection",
)


def _native() -> list[ContainerSpec]:
    return container_specs.slurm_containers(load(DEFAULT_BLUEPRINT))


def _ssh_binds(specs: list[ContainerSpec]) -> dict[str, dict[str, str]]:
    return {spec.hostname: {f"/keys/{spec.hostname}": "/etc/ssh/ssh_host_ed25519_key"} for spec in specs}


def _machines() -> list[ContainerSpec]:
    native = _native()
    return container_specs.machines(native, _ssh_binds(native))


def _by_host(specs: list[ContainerSpec]) -> dict[str, ContainerSpec]:
    return {spec.hostname: spec for spec in specs}


def test_machines_are_the_same_hosts_booting_systemd_from_the_host_image() -> None:
    native, machines = _native(), _machines()
    assert [(m.hostname, m.role, m.nodes, m.ports) for m in machines] == [
        (n.hostname, n.role, n.nodes, n.ports) for n in native
    ]
    assert {m.boot for m in machines} == {"systemd"}
    assert {m.image for m in machines} == {contract.role_image("host")}
    assert {n.boot for n in native} == {"lab-daemon"}
    assert contract.role_image("host") not in {n.image for n in native}


def test_every_slurm_hosts_logs_are_a_volume_the_egress_gateway_reads_only() -> None:
    native = _by_host(_native())
    slurm_hosts = ["controller", "dgx-001", "dgx-002", "dgx-003", "dgx-004"]
    for host in slurm_hosts:
        assert native[host].volumes[f"lab-default-log-{host}"] == contract.SLURM_LOG_DIR
    assert native["egress"].read_volumes == {
        f"lab-default-log-{host}": f"{contract.SITE_LOGS_MOUNT}/{host}" for host in slurm_hosts
    }


def test_the_container_native_node_runs_the_node_image() -> None:
    node = _by_host(_native())["dgx-001"]
    assert node.image == contract.role_image("node")


def test_machines_keep_no_volume_and_no_slurm_config_bind() -> None:
    config = str(contract.slurm_config_dir("default"))
    native = _by_host(_native())
    assert config in native["controller"].binds  # what machines() drops is there to begin with
    assert native["controller"].volumes
    for machine in _machines():
        assert machine.volumes == machine.read_volumes == {}, machine.hostname
        assert config not in machine.binds, machine.hostname
        assert contract.SLURM_CONFIG_MOUNT not in machine.binds.values(), machine.hostname


def test_a_machine_node_keeps_the_shared_bind_and_gets_cgroups_and_its_ssh_keys() -> None:
    node = _by_host(_machines())["dgx-002"]
    assert node.binds == {
        str(contract.shared_dir("default")): contract.SHARED_MOUNT,
        "/sys/fs/cgroup": "/sys/fs/cgroup",
        "/keys/dgx-002": "/etc/ssh/ssh_host_ed25519_key",
    }


def test_each_machine_gets_only_its_own_ssh_binds() -> None:
    for machine in _machines():
        keys = [source for source in machine.binds if source.startswith("/keys/")]
        assert keys == [f"/keys/{machine.hostname}"]


def test_machines_have_a_fresh_run_and_run_lock_and_nodes_keep_the_drill_tmpfs() -> None:
    machines = _by_host(_machines())
    assert machines["controller"].tmpfs == {"/run": "mode=0755", "/run/lock": "mode=0755"}
    assert machines["dgx-001"].tmpfs == {
        "/run": "mode=0755",
        contract.DRILL_FULL_MOUNT: f"size={contract.DRILL_FULL_SIZE},mode=0755",
        "/run/lock": "mode=0755",
    }


def test_machines_leave_the_container_native_specs_as_they_were() -> None:
    native = _native()
    container_specs.machines(native, _ssh_binds(native))
    assert native == _native()


def test_switching_kind_changes_every_digest_so_containers_are_recreated() -> None:
    native, machines = _native(), _machines()
    for before, after in zip(native, machines, strict=True):
        assert before.digest("sha256:same") != after.digest("sha256:same"), before.hostname
    assert machines[0].digest("sha256:same") == _machines()[0].digest("sha256:same")


def test_a_host_without_ssh_binds_is_refused() -> None:
    native = _native()
    binds = _ssh_binds(native)
    del binds["dbd"]
    with pytest.raises(KeyError, match="dbd"):
        container_specs.machines(native, binds)


def _host_vars(hosts: Any) -> dict[str, Any]:
    return inventory(load(DEFAULT_BLUEPRINT), hosts)["all"]["vars"]


def _addresses(hosts: Any) -> dict[str, str]:
    children = inventory(load(DEFAULT_BLUEPRINT), hosts)["all"]["children"]
    return {
        host: host_vars["ansible_host"]
        for group in children.values()
        for host, host_vars in group["hosts"].items()
    }


def test_container_hosts_are_reached_through_docker_and_carry_their_packages() -> None:
    variables = _host_vars("container")
    assert variables["ansible_connection"] == "community.docker.docker"
    assert variables["slurm_service_mode"] == "container"
    assert variables["slurm_install_packages"] is False
    assert variables["prometheus_install_package"] is False
    assert variables["lab_fake_gpus"] is True
    assert variables["slurm_use_cgroups"] is False
    assert variables["slurm_declare_node_shape"] is True


def test_systemd_hosts_install_their_packages_but_stay_lab_hosts() -> None:
    variables = _host_vars("systemd")
    assert "ansible_connection" not in variables  # the lab adds its SSH connection once hosts run
    assert variables["slurm_service_mode"] == "systemd"
    assert variables["slurm_install_packages"] is True
    assert "prometheus_install_package" not in variables
    assert variables["lab_fake_gpus"] is True
    assert variables["slurm_use_cgroups"] is False
    assert variables["slurm_declare_node_shape"] is True


def test_real_hosts_get_every_role_default_but_the_service_mode() -> None:
    variables = _host_vars("real")
    assert variables["slurm_service_mode"] == "systemd"
    assert [name for name in LAB_VARIABLES if name in variables] == []


def test_the_slurm_cluster_is_the_same_whatever_the_hosts() -> None:
    clusters = [_host_vars(hosts)["slurm_cluster"] for hosts in ("container", "systemd", "real")]
    assert clusters[0] == clusters[1] == clusters[2]


def test_container_hosts_are_addressed_by_container_name() -> None:
    assert _addresses("container") == {
        "dbd": "lab-default-dbd",
        "controller": "lab-default-controller",
        "restd": "lab-default-restd",
        "dgx-001": "lab-default-dgx-001",
        "dgx-002": "lab-default-dgx-002",
        "dgx-003": "lab-default-dgx-003",
        "dgx-004": "lab-default-dgx-004",
        "prometheus": "lab-default-prometheus",
    }


@pytest.mark.parametrize("hosts", ["systemd", "real"])
def test_other_hosts_are_addressed_by_their_blueprint_name(hosts: str) -> None:
    addresses = _addresses(hosts)
    assert addresses == {host: host for host in addresses}
    assert sorted(addresses) == sorted(_addresses("container"))


@pytest.mark.parametrize("hosts", ["container", "systemd", "real"])
def test_every_node_host_names_its_slurmd_nodes(hosts: str) -> None:
    children = inventory(load(DEFAULT_BLUEPRINT), hosts)["all"]["children"]
    nodes = {host: v["slurmd_node_names"] for host, v in children["slurmd"]["hosts"].items()}
    assert nodes == {f"dgx-00{i}": [f"dgx-00{i}"] for i in range(1, 5)}


SHIM_FILES = {
    "lab/__init__.py": b"",
    "lab/dcgm/shim.py": b"print('shim')\n",
    "lab/dcgm/metrics.csv": b"name,type\n",
    "bin/lab-gpu-app": b"#!/bin/sh\n",
}


def test_write_tar_gives_the_same_bytes_for_the_same_files(tmp_path: Path) -> None:
    one = images.write_tar(tmp_path / "one.tar", SHIM_FILES)
    reordered = dict(reversed(list(SHIM_FILES.items())))
    two = images.write_tar(tmp_path / "two.tar", reordered)
    assert one.read_bytes() == two.read_bytes()


def test_write_tar_leaves_an_unchanged_archive_alone(tmp_path: Path) -> None:
    archive = images.write_tar(tmp_path / "state" / "dcgm-shim.tar", SHIM_FILES)
    os.utime(archive, (1_000_000_000, 1_000_000_000))
    images.write_tar(archive, SHIM_FILES)
    assert archive.stat().st_mtime == 1_000_000_000


def test_write_tar_rewrites_an_archive_whose_files_changed(tmp_path: Path) -> None:
    archive = images.write_tar(tmp_path / "dcgm-shim.tar", SHIM_FILES)
    os.utime(archive, (1_000_000_000, 1_000_000_000))
    images.write_tar(archive, {**SHIM_FILES, "lab/dcgm/shim.py": b"print('new')\n"})
    assert archive.stat().st_mtime != 1_000_000_000
    with tarfile.open(archive) as tar:
        member = tar.extractfile("lab/dcgm/shim.py")
        assert member is not None
        assert member.read() == b"print('new')\n"


def test_write_tar_extracts_to_the_given_files_with_fixed_modes(tmp_path: Path) -> None:
    archive = images.write_tar(tmp_path / "dcgm-shim.tar", SHIM_FILES)
    with tarfile.open(archive) as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        assert sorted(files) == sorted(SHIM_FILES)
        assert {name: files[name].mode for name in files} == {
            "lab/__init__.py": 0o644,
            "lab/dcgm/shim.py": 0o644,
            "lab/dcgm/metrics.csv": 0o644,
            "bin/lab-gpu-app": 0o755,
        }
        assert {m.mtime for m in files.values()} == {0}
        tar.extractall(tmp_path / "out", filter="data")
    for name, data in SHIM_FILES.items():
        assert (tmp_path / "out" / name).read_bytes() == data


def test_write_tar_packs_the_real_shim_package(tmp_path: Path) -> None:
    files = images.package_files(("dcgm",), images.IMAGE_MODULES)
    archive = images.write_tar(tmp_path / "dcgm-shim.tar", files)
    with tarfile.open(fileobj=io.BytesIO(archive.read_bytes())) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
    assert names == set(files)
    assert "lab/dcgm/__init__.py" in names
    assert not [name for name in names if name.endswith(".pyc")]
