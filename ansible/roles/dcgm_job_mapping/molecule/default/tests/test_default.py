"""What role dcgm_job_mapping promises on a fresh host with two Slurm nodes (gpu-01, gpu-02)."""

from __future__ import annotations

import pytest

INSTALL_DIR = "/usr/local/libexec/dcgm-job-mapping"
MAPPING_DIR = "/var/lib/dcgm-exporter/job-mapping"
NODES = ("gpu-01", "gpu-02")


def test_the_script_is_installed_as_prolog(host) -> None:
    script = host.file(f"{INSTALL_DIR}/prolog/dcgm-job-mapping")
    assert script.is_file
    assert script.mode == 0o755
    assert script.user == "root"
    assert script.content_string.startswith("#!/usr/bin/python3")


def test_the_epilog_is_a_link_to_the_same_script(host) -> None:
    epilog = host.file(f"{INSTALL_DIR}/epilog/dcgm-job-mapping")
    assert epilog.is_symlink
    assert epilog.linked_to == f"{INSTALL_DIR}/prolog/dcgm-job-mapping"


@pytest.mark.parametrize("node", NODES)
def test_each_node_has_its_mapping_directory(host, node: str) -> None:
    directory = host.file(f"{MAPPING_DIR}/{node}")
    assert directory.is_directory
    assert directory.mode == 0o755


def test_the_config_names_the_per_node_directory(host) -> None:
    config = host.file("/etc/slurm/dcgm-job-mapping.conf")
    assert config.mode == 0o644
    assert f"DCGM_HPC_JOB_MAPPING_DIR={MAPPING_DIR}/%n\n" in config.content_string
    assert "DCGM_JOB_MAPPING_LOG=/var/log/slurm/dcgm-job-mapping.log\n" in config.content_string


def test_tmpfiles_empties_every_mapping_directory_at_boot(host) -> None:
    entries = host.file("/etc/tmpfiles.d/dcgm-job-mapping.conf").content_string
    assert [line for line in entries.splitlines() if not line.startswith("#")] == [
        f"D! {MAPPING_DIR}/{node} 0755 root root -" for node in NODES
    ]
    # What systemd-tmpfiles-setup.service does at boot: D! lines empty the directories.
    host.check_output(f"touch {MAPPING_DIR}/gpu-01/0 {MAPPING_DIR}/gpu-02/1")
    host.check_output("systemd-tmpfiles --boot --remove --create /etc/tmpfiles.d/dcgm-job-mapping.conf")
    for node in NODES:
        assert host.file(f"{MAPPING_DIR}/{node}").listdir() == []


def test_prolog_and_epilog_write_the_nodes_mapping_file(host) -> None:
    # slurmd runs the script with SLURM_SCRIPT_CONTEXT and an environment of its own; the mapping
    # directory comes from the role's config file (%n -> SLURMD_NODENAME).
    job = "SLURM_JOB_ID=42 SLURM_JOB_GPUS=0,1 SLURMD_NODENAME=gpu-02 DCGM_JOB_MAPPING_LOG=-"
    host.check_output(
        f"env -i {job} SLURM_SCRIPT_CONTEXT=prolog_slurmd {INSTALL_DIR}/prolog/dcgm-job-mapping"
    )
    assert host.file(f"{MAPPING_DIR}/gpu-02/0").content_string == "42\n"
    assert host.file(f"{MAPPING_DIR}/gpu-02/1").content_string == "42\n"
    assert not host.file(f"{MAPPING_DIR}/gpu-01/0").exists
    host.check_output(
        f"env -i {job} SLURM_SCRIPT_CONTEXT=epilog_slurmd {INSTALL_DIR}/epilog/dcgm-job-mapping"
    )
    assert host.file(f"{MAPPING_DIR}/gpu-02/0").content_string == ""
