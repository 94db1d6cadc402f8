"""A `lab up` on an unchanged lab skips Ansible: the digest of what provisioning depends on is stable
for the same inputs and changes with any of them (a variable, a file a variable names, a role file)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lab.bringup import provision
from lab.paths import ANSIBLE_DIR


@pytest.fixture
def ansible_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "ansible"
    shutil.copytree(ANSIBLE_DIR, copy)
    monkeypatch.setattr(provision, "ANSIBLE_DIR", copy)
    return copy


def test_the_same_inputs_give_the_same_digest(ansible_copy: Path) -> None:
    inventory = {"all": {"vars": {"slurm_cluster": "lab"}}}
    assert provision.inputs_digest(inventory, {"a": 1}) == provision.inputs_digest(inventory, {"a": 1})


def test_a_variable_changes_the_digest(ansible_copy: Path) -> None:
    inventory = {"all": {"vars": {"slurm_cluster": "lab"}}}
    assert provision.inputs_digest(inventory, {"a": 1}) != provision.inputs_digest(inventory, {"a": 2})
    other = {"all": {"vars": {"slurm_cluster": "lab2"}}}
    assert provision.inputs_digest(inventory, {}) != provision.inputs_digest(other, {})


def test_a_file_a_variable_names_changes_the_digest_with_its_content(
    tmp_path: Path, ansible_copy: Path
) -> None:
    binary = tmp_path / "slurm_exporter"
    binary.write_bytes(b"v1")
    variables = {"slurm_exporter_binary_src": str(binary), "nested": [{"key": str(tmp_path / "absent")}]}
    before = provision.inputs_digest({}, variables)
    binary.write_bytes(b"v2")  # rebuilt at the same path
    assert provision.inputs_digest({}, variables) != before


def test_a_role_file_changes_the_digest(ansible_copy: Path) -> None:
    before = provision.inputs_digest({}, {})
    tasks = ansible_copy / "roles" / "prometheus" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "\n# edited\n")
    assert provision.inputs_digest({}, {}) != before


def test_the_record_of_a_provisioning_gives_its_digest(tmp_path: Path, ansible_copy: Path) -> None:
    assert provision.provisioned_digest(tmp_path) is None
    provision.record_provisioned(tmp_path, {"all": {}}, {"a": 1})
    assert provision.provisioned_digest(tmp_path) == provision.inputs_digest({"all": {}}, {"a": 1})
    provision.forget_provisioned(tmp_path)
    assert provision.provisioned_digest(tmp_path) is None


def test_a_web_ui_install_amends_the_record_so_the_next_lab_up_finds_nothing_to_do(
    tmp_path: Path, ansible_copy: Path
) -> None:
    tarball = tmp_path / "ui.tar.gz"
    tarball.write_bytes(b"ui")
    provision.record_provisioned(tmp_path, {"all": {}}, {"a": 1})
    assert provision.amend_provisioned(tmp_path, {"prometheus_web_ui_archive_src": str(tarball)})
    with_ui = {"a": 1, "prometheus_web_ui_archive_src": str(tarball)}
    assert provision.provisioned_digest(tmp_path) == provision.inputs_digest({"all": {}}, with_ui)


def test_no_amend_when_the_record_no_longer_describes_the_lab(tmp_path: Path, ansible_copy: Path) -> None:
    assert not provision.amend_provisioned(tmp_path, {"b": 2})  # never provisioned
    provision.record_provisioned(tmp_path, {}, {"a": 1})
    before = provision.provisioned_digest(tmp_path)
    tasks = ansible_copy / "roles" / "prometheus" / "tasks" / "main.yml"
    tasks.write_text(tasks.read_text() + "\n# edited\n")  # a role changed since: a full run is due
    assert not provision.amend_provisioned(tmp_path, {"b": 2})
    assert provision.provisioned_digest(tmp_path) == before
