"""The lab's contract (lab/contract.py) is the one source of its ports and paths: Ansible's copy is
current, and the scripts that run outside the lab package agree with it."""

import re

from lab import contract
from lab.dcgm.node import NodeConfig
from lab.paths import PROJECT_ROOT


def test_the_ansible_copy_is_current() -> None:
    """gen-check: `just gen` rewrites ansible/group_vars/all/contract.yml from lab/contract.py."""
    assert contract.ANSIBLE_VARS_FILE.read_text() == contract.ansible_vars_text(), "stale: run `just gen`"


def test_standalone_scripts_agree_with_the_contract() -> None:
    health_check = (PROJECT_ROOT / "healthcheck" / "dcgm-xid-check").read_text()
    assert f"http://127.0.0.1:{contract.DCGM_EXPORTER_PORT}/metrics" in health_check
    gpu_app = (PROJECT_ROOT / "containers" / "node" / "lab-gpu-app").read_text()
    assert f"{contract.SHARED_MOUNT}/{contract.XID_DIR}" in gpu_app
    daemon = (PROJECT_ROOT / "containers" / "base" / "lab-daemon").read_text()
    assert re.search(rf"slurmrestd -a rest_auth/jwt 0\.0\.0\.0:{contract.SLURMRESTD_PORT}\b", daemon)


def test_the_shim_listens_where_dcgm_exporter_does() -> None:
    assert NodeConfig("dgx-001").address == f":{contract.DCGM_EXPORTER_PORT}"


def test_slurm_images_of_another_release_carry_its_series_and_the_others_do_not() -> None:
    assert contract.role_image("controller") == "aifactory-lab/controller:0.1.0"
    assert contract.role_image("controller", "26.05") == "aifactory-lab/controller:0.1.0-slurm-26.05"
    assert contract.image_tag("base", "26.05") == "aifactory-lab/base:0.1.0-slurm-26.05"
    assert contract.role_image("prometheus", "26.05") == "aifactory-lab/prometheus:0.1.0"
