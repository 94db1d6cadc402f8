"""`lab egress names`, `reveal` and `rotate-key` as a user calls them (typer's test runner, state under
tmp_path; no lab is up: --blueprint FILE, or --lab NAME with its recorded blueprint)."""

from __future__ import annotations

import hashlib
import hmac
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from lab.cli import app
from lab.commands import egress as egress_command
from lab.paths import BLUEPRINTS_DIR

SLURM = str(BLUEPRINTS_DIR / "default.yaml")
RUNAI = str(BLUEPRINTS_DIR / "runai.yaml")
runner = CliRunner()


def lab(*argv: str, answer: str | None = None) -> Any:
    return runner.invoke(app, ["egress", *argv], input=answer)


def key_of(state: Path, name: str) -> bytes:
    return (state / name / "keys" / "egress" / "hmac-sha256.key").read_bytes()


def hmac_hex(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()


@pytest.fixture(autouse=True)
def restarts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The gateway restarts rotate-key asked for, by lab (no engine here: no gateway runs)."""
    asked: list[str] = []

    def restart(name: str) -> bool:
        asked.append(name)
        return False

    monkeypatch.setattr(egress_command.gateway, "restart", restart)
    return asked


@pytest.fixture
def runai_key(isolated_state: Path) -> bytes:
    result = lab("rotate-key", "--blueprint", RUNAI)
    assert result.exit_code == 0, result.output
    return key_of(isolated_state, "runai-default")


def test_the_groups_help_teaches_the_fence() -> None:
    text = " ".join(lab("--help").output.split())
    for part in (
        "no job id as a label and no real name",
        "HMAC-SHA256",
        "hmac-sha256",
        "Node names, GPU indices and UUIDs, partitions and node pools cross as they are",
        ".lab/LAB/keys/egress/hmac-sha256.key, mode 0400",
        "never leave the site",
        "every pseudonym changes from that instant",
    ):
        assert part in text, part


def test_names_lists_each_name_with_its_labels(isolated_state: Path) -> None:
    result = lab("names", "--blueprint", SLURM)
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line}
    assert "pseudonymised labels: user, account, users" in result.output
    assert "blueprint users" in rows["alice"] and " user " in rows["alice"]
    assert "account" in rows["root"] and "users" in rows["root"]
    assert "PSEUDONYM" not in result.output


def test_names_shows_what_is_made_at_run_time(isolated_state: Path) -> None:
    result = lab("names", "--blueprint", RUNAI)
    assert result.exit_code == 0, result.output
    assert "made at run time" in result.output
    assert "train-NNNNN-xxxxx (a Job's pod: random suffix)" in result.output
    assert "not revealed: random suffix" in result.output
    assert "dist-NNNNN-master-0, dist-NNNNN-worker-0 … 2" in result.output


def test_names_with_pseudonyms_needs_the_key(isolated_state: Path) -> None:
    result = lab("names", "--blueprint", SLURM, "--pseudonyms")
    assert result.exit_code == 1
    assert "no egress key" in result.output and "lab egress rotate-key --lab default" in result.output
    assert lab("rotate-key", "--blueprint", SLURM).exit_code == 0
    result = lab("names", "--blueprint", SLURM, "--pseudonyms")
    assert result.exit_code == 0, result.output
    key = key_of(isolated_state, "default")
    assert hmac_hex(key, "alice") in next(
        line for line in result.output.splitlines() if line.startswith("alice")
    )


def test_rotate_key_makes_a_private_key_and_says_what_changes(isolated_state: Path) -> None:
    result = lab("rotate-key", "--blueprint", RUNAI)
    assert result.exit_code == 0, result.output
    path = isolated_state / "runai-default" / "keys" / "egress" / "hmac-sha256.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o400
    assert str(path) in result.output
    assert "Every pseudonym made with it changes from this instant" in " ".join(result.output.split())


def test_rotation_restarts_the_labs_running_gateway_with_the_new_key(
    isolated_state: Path, restarts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    result = lab("rotate-key", "--blueprint", RUNAI)
    assert restarts == ["runai-default"]
    assert "gateway restarted" not in result.output  # none ran
    monkeypatch.setattr(egress_command.gateway, "restart", lambda name: True)
    result = lab("rotate-key", "--blueprint", RUNAI, "--yes")
    assert "the egress gateway restarted with the new key" in result.output


def test_a_gateway_that_does_not_restart_is_said_with_the_key_already_new(
    isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fails(name: str) -> bool:
        raise egress_command.gateway.GatewayError("lab-runai-default-egress: `lab-daemon restart` exited 1")

    monkeypatch.setattr(egress_command.gateway, "restart", fails)
    result = lab("rotate-key", "--blueprint", RUNAI)
    assert result.exit_code == 1
    assert "exited 1" in result.output and "still sends with the old one" in " ".join(result.output.split())
    assert key_of(isolated_state, "runai-default")


def test_rotating_an_existing_key_asks_first(isolated_state: Path, runai_key: bytes) -> None:
    refused = lab("rotate-key", "--blueprint", RUNAI, answer="n\n")
    assert refused.exit_code == 1 and "can no longer be revealed" in refused.output
    assert key_of(isolated_state, "runai-default") == runai_key
    assert lab("rotate-key", "--blueprint", RUNAI, answer="y\n").exit_code == 0
    assert key_of(isolated_state, "runai-default") != runai_key
    assert lab("rotate-key", "--blueprint", RUNAI, "--yes").exit_code == 0


@pytest.mark.parametrize(
    ("value", "labels"),
    [
        ("team-a", "labels: project, queue_name, label_project, label_runai_queue"),
        ("runai-team-c", "labels: pod_namespace, namespace, job_namespace"),
        ("infer-00313", "labels: workload_name, job_name, created_by_name, owner_name"),
        ("dist-00002-master-0", "labels: pod_name, pod"),
    ],
)
def test_reveal_prints_the_real_name(runai_key: bytes, value: str, labels: str) -> None:
    result = lab("reveal", hmac_hex(runai_key, value), "--blueprint", RUNAI)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == value
    assert labels in result.output


def test_reveal_forgives_upper_case_and_blanks(runai_key: bytes) -> None:
    result = lab("reveal", f" {hmac_hex(runai_key, 'user-b2').upper()} ", "--blueprint", RUNAI)
    assert result.exit_code == 0 and result.stdout.splitlines()[0] == "user-b2"


def test_reveal_after_rotation_finds_nothing(runai_key: bytes) -> None:
    made_before = hmac_hex(runai_key, "team-b")
    assert lab("rotate-key", "--blueprint", RUNAI, "--yes").exit_code == 0
    result = lab("reveal", made_before, "--blueprint", RUNAI)
    assert result.exit_code == 1
    message = " ".join(result.output.split())
    assert "no name of lab 'runai-default' has the pseudonym" in message
    assert "made with another key" in message and "lab egress rotate-key" in message


def test_reveal_past_the_bound_finds_nothing_and_says_so(runai_key: bytes) -> None:
    result = lab(
        "reveal", hmac_hex(runai_key, "train-00051"), "--blueprint", RUNAI, "--workloads-up-to", "50"
    )
    assert result.exit_code == 1 and "--workloads-up-to" in result.output
    result = lab(
        "reveal", hmac_hex(runai_key, "train-00051"), "--blueprint", RUNAI, "--workloads-up-to", "51"
    )
    assert result.exit_code == 0


def test_reveal_refuses_what_is_not_a_pseudonym(runai_key: bytes) -> None:
    result = lab("reveal", "team-a", "--blueprint", RUNAI)
    assert result.exit_code == 1
    assert "is not an hmac-sha256 pseudonym: those are 64 hex digits" in result.output


def test_reveal_refuses_a_key_others_can_read(isolated_state: Path, runai_key: bytes) -> None:
    path = isolated_state / "runai-default" / "keys" / "egress" / "hmac-sha256.key"
    path.chmod(0o644)
    result = lab("reveal", hmac_hex(runai_key, "team-a"), "--blueprint", RUNAI)
    assert result.exit_code == 1
    assert f"chmod 0400 {path}" in result.output and "lab egress rotate-key" in result.output


def test_lab_name_uses_the_recorded_blueprint(isolated_state: Path, runai_key: bytes) -> None:
    (isolated_state / "runai-default").mkdir(exist_ok=True)
    shutil.copy(RUNAI, isolated_state / "runai-default" / "blueprint.yaml")
    result = lab("reveal", hmac_hex(runai_key, "research"), "--lab", "runai-default")
    assert result.exit_code == 0 and result.stdout.splitlines()[0] == "research"


def test_a_lab_without_a_recorded_blueprint_is_named_with_the_fix(isolated_state: Path) -> None:
    result = lab("names", "--lab", "nowhere")
    assert result.exit_code == 1
    assert "lab 'nowhere' has no recorded blueprint" in result.output and "--blueprint" in result.output


def test_lab_and_blueprint_must_agree(isolated_state: Path) -> None:
    result = lab("names", "--lab", "other", "--blueprint", SLURM)
    assert result.exit_code == 1 and "is lab 'default', not 'other'" in result.output


def test_without_a_name_the_only_running_lab_is_used(
    isolated_state: Path, runai_key: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(RUNAI, isolated_state / "runai-default" / "blueprint.yaml")
    monkeypatch.setattr(egress_command.engine, "require_engine", lambda: object())
    monkeypatch.setattr(egress_command.running, "resolve_lab", lambda _client, _name: "runai-default")
    result = lab("reveal", hmac_hex(runai_key, "product"))
    assert result.exit_code == 0 and result.stdout.splitlines()[0] == "product"


def test_egress_off_says_so(isolated_state: Path, tmp_path: Path) -> None:
    data = yaml.safe_load(Path(SLURM).read_text())
    data["egress"] = {"enabled": False}
    path = tmp_path / "off.yaml"
    path.write_text(yaml.safe_dump(data))
    names = lab("names", "--blueprint", str(path))
    assert names.exit_code == 0 and "egress is off (egress.enabled: false): it sends nothing" in names.output
    reveal = lab("reveal", "a" * 64, "--blueprint", str(path))
    assert reveal.exit_code == 1 and "egress off" in reveal.output


def test_a_bad_egress_section_is_reported_as_one_error(tmp_path: Path) -> None:
    data = yaml.safe_load(Path(SLURM).read_text())
    data["egress"] = {"pseudonymised_labels": "user"}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    result = lab("names", "--blueprint", str(path))
    assert result.exit_code == 1
    assert f"{path}: 1 problem(s)" in result.output and "egress.pseudonymised_labels" in result.output
