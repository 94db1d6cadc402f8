"""The project's rule files (the prometheus and central_store roles' files/rules/) under the lab's
pinned promtool: `promtool check rules` passes, and `promtool test rules` passes the unit tests cut from
the lab's captures (tests/rules/, written by tests/rules/cut_series.py, which must be current), the
pinned exporter's own alerts.yml and rules.yml among them. The same commands as `just rules-test`;
promtool runs in the lab's Prometheus image, whose tag comes from lab.bringup.images."""

from __future__ import annotations

import subprocess
import sys

import docker
import pytest
from docker.errors import ImageNotFound

from lab.contract import role_image
from lab.paths import PROJECT_ROOT
from lab.slurm_exporter import upstream_rules
from lab.slurm_exporter.binary import DEFAULT_ARCHIVE

pytestmark = pytest.mark.lab

ROLES = PROJECT_ROOT / "ansible" / "roles"
RULES = sorted((ROLES / "prometheus" / "files" / "rules").glob("*.yml"))
# The centre's vmalert rules: PromQL as well (their unit tests are among TESTS).
CENTRAL_RULES = sorted((ROLES / "central_store" / "files" / "rules").glob("*.yml"))
TESTS = sorted((PROJECT_ROOT / "tests" / "rules").glob("*.test.yml"))


@pytest.fixture(scope="module")
def promtool(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """promtool in the lab's Prometheus image, the project at /w and the exporter's own rule files, read
    from its tag archive as `lab up` reads them, at /upstream (the path their unit tests name)."""
    image = role_image("prometheus")
    try:
        docker.from_env().images.get(image)
    except ImageNotFound:
        pytest.fail(f"image {image} is missing: `lab up` builds it (promtool 2.53.3 comes with it)")
    upstream = tmp_path_factory.mktemp("upstream")
    upstream_rules.extract(DEFAULT_ARCHIVE, upstream)
    mounts = ["-v", f"{PROJECT_ROOT}:/w:ro", "-v", f"{upstream}:/upstream:ro"]
    return ["docker", "run", "--rm", *mounts, "-w", "/w", image, "promtool"]


def _relative(paths: list[object]) -> list[str]:
    return [str(path).removeprefix(f"{PROJECT_ROOT}/") for path in paths]


def test_every_area_has_a_rule_file_and_a_unit_test() -> None:
    assert {path.stem for path in RULES} >= {"dcgm", "slurm", "runai"}
    assert len(TESTS) >= 4, TESTS


def test_rule_files_pass_promtool_check(promtool: list[str]) -> None:
    upstream = [f"/upstream/{name}" for name in upstream_rules.MEMBERS.values()]
    done = subprocess.run(
        [*promtool, "check", "rules", *_relative([*RULES, *CENTRAL_RULES]), *upstream],
        capture_output=True,
        text=True,
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
