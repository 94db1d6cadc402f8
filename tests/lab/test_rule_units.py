"""The project's rule files (ansible/roles/prometheus/files/rules/) under the lab's pinned promtool:
`promtool check rules` passes, and `promtool test rules` passes the unit tests cut from the lab's
captures (tests/rules/, written by tests/rules/cut_series.py, which must be current). The same commands
as `just rules-test`; promtool runs in the lab's Prometheus image, whose tag comes from lab.bringup.images."""

from __future__ import annotations

import subprocess
import sys

import docker
import pytest
from docker.errors import ImageNotFound

from lab.bringup.images import role_image
from lab.paths import PROJECT_ROOT

pytestmark = pytest.mark.lab

RULES = sorted((PROJECT_ROOT / "ansible" / "roles" / "prometheus" / "files" / "rules").glob("*.yml"))
TESTS = sorted((PROJECT_ROOT / "tests" / "rules").glob("*.test.yml"))


@pytest.fixture(scope="module")
def promtool() -> list[str]:
    image = role_image("prometheus")
    try:
        docker.from_env().images.get(image)
    except ImageNotFound:
        pytest.fail(f"image {image} is missing: `lab up` builds it (promtool 2.53.3 comes with it)")
    return ["docker", "run", "--rm", "-v", f"{PROJECT_ROOT}:/w:ro", "-w", "/w", image, "promtool"]


def _relative(paths: list[object]) -> list[str]:
    return [str(path).removeprefix(f"{PROJECT_ROOT}/") for path in paths]


def test_every_area_has_a_rule_file_and_a_unit_test() -> None:
    assert {path.stem for path in RULES} >= {"dcgm", "slurm", "runai"}
    assert len(TESTS) >= 4, TESTS


def test_rule_files_pass_promtool_check(promtool: list[str]) -> None:
    done = subprocess.run(
        [*promtool, "check", "rules", *_relative(list(RULES))], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_rule_unit_tests_pass_promtool(promtool: list[str]) -> None:
    done = subprocess.run(
        [*promtool, "test", "rules", *_relative(list(TESTS))], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("SUCCESS") == len(TESTS), done.stdout


def test_unit_tests_are_the_current_cut_of_the_captures() -> None:
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "tests" / "rules" / "cut_series.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
