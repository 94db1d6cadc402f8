"""Each deployable role's Molecule scenario: `molecule test` in ansible/roles/<role>, as its users run it.

A scenario boots the lab's machine-like host image (Debian trixie, systemd as PID 1; no --privileged)
as a container named molecule-<role, in hyphens>, applies the role to it, applies it again (molecule's
idempotence step: a task that reports a change fails it), runs the scenario's testinfra tests
(molecule/default/tests/) and removes the container. No lab needs to be up.

`molecule test` wall time, two runs on the 2-core machine with the host image and the exporter binary
already built and a default lab running beside it (about 4.5 min for the four):

    dcgm_job_mapping   58-72 s
    dcgm_health_check  48-54 s
    slurm_exporter     82-84 s  (prepare installs slurm-client with apt)
    prometheus         77-83 s  (the role installs the prometheus package with apt)
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest
import yaml

from lab.bringup import images
from lab.paths import ANSIBLE_DIR
from lab.progress import Progress
from lab.slurm_exporter import binary

pytestmark = pytest.mark.lab

ROLES = ("dcgm_job_mapping", "dcgm_health_check", "slurm_exporter", "prometheus")
SCENARIO_TIMEOUT_S = 900  # the slowest measured 84 s; apt downloads on a cold mirror take longer
TAIL_LINES = 80
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# molecule 26 logs "default ➜ idempotence: Executed: Successful"; earlier releases logged the other.
IDEMPOTENCE_PASSED = re.compile(r"idempotence: Executed: Successful|Idempotence completed successfully")


def scenario_dir(role: str) -> Path:
    return ANSIBLE_DIR / "roles" / role / "molecule" / "default"


@pytest.fixture(scope="module")
def molecule_env() -> dict[str, str]:
    """The environment every scenario runs in: the host image built, the exporter binary's path."""
    needed = ("molecule", "molecule_plugins.docker")
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed. Fix: pip install -e '.[dev]'")
    client = docker.from_env()
    try:
        tag = images.build_host(client, images.BuildOptions(), Progress(quiet=True))  # cached when current
    finally:
        client.close()
    for role in ROLES:
        scenario = yaml.safe_load((scenario_dir(role) / "molecule.yml").read_text(encoding="utf-8"))
        assert [p["image"] for p in scenario["platforms"]] == [tag], f"{role}'s scenario does not boot {tag}"
    exporter = binary.ensure_binary(Progress(quiet=True), None).binary
    return {
        **os.environ,
        "LAB_SLURM_EXPORTER_BINARY": str(exporter),
        "NO_COLOR": "1",
        "ANSIBLE_NOCOLOR": "1",
        "PY_COLORS": "0",
    }


@pytest.mark.parametrize("role", ROLES)
def test_molecule_scenario_passes(role: str, molecule_env: dict[str, str]) -> None:
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "molecule", "test"],
        cwd=scenario_dir(role).parent.parent,
        env=molecule_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=SCENARIO_TIMEOUT_S,
        check=False,
    )
    seconds = time.monotonic() - began
    output = ANSI.sub("", result.stdout)
    tail = "\n".join(output.splitlines()[-TAIL_LINES:])
    assert result.returncode == 0, (
        f"molecule test of {role}: exit {result.returncode} after {seconds:.0f} s\n{tail}"
    )
    assert IDEMPOTENCE_PASSED.search(output), f"{role}: molecule's idempotence step did not run\n{tail}"
    print(f"molecule test of {role}: {seconds:.0f} s")
