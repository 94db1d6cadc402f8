"""The Slurm kind on machine-like hosts (`lab up --hosts systemd`): what it renders with the lab's SSH
keys, and which kind of host it agrees to give a lab (the engine is replaced: no container is asked)."""

from pathlib import Path
from typing import Any

import pytest

from lab.blueprint.slurm_blueprint import load
from lab.bringup import container_specs
from lab.bringup.keys import LabKeys
from lab.bringup.provision import ProvisionError
from lab.bringup.ssh import HOST_KEY_MOUNT, SshKeys
from lab.kinds import slurm_lab
from lab.paths import BLUEPRINTS_DIR, DEFAULT_BLUEPRINT

KEYS = LabKeys(Path("/k/munge.key"), Path("/k/jwt.key"), Path("/k/db.pass"))
SSH_KEYS = SshKeys(Path("/k/ssh"))
ENGINE = object()  # stands in for a client of a running engine


def _render_on_machines() -> Any:
    return slurm_lab.render(
        load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, Path("/cache/slurm_exporter"), SSH_KEYS
    )


def test_render_with_ssh_keys_gives_machine_specs_with_each_hosts_keys() -> None:
    model = load(DEFAULT_BLUEPRINT)
    native = container_specs.slurm_containers(model)
    rendered = _render_on_machines()
    assert rendered.specs == container_specs.machines(
        native, {spec.hostname: SSH_KEYS.binds(spec.hostname) for spec in native}
    )
    assert {spec.boot for spec in rendered.specs} == {"systemd"}
    for spec in rendered.specs:
        assert spec.binds[str(SSH_KEYS.host_key(spec.hostname))] == HOST_KEY_MOUNT


def test_render_with_ssh_keys_connects_over_ssh_checking_host_keys() -> None:
    variables = _render_on_machines().inventory["all"]["vars"]
    assert variables["ansible_connection"] == "ssh"
    assert variables["ansible_ssh_private_key_file"] == "/k/ssh/id_ed25519"
    options = variables["ansible_ssh_common_args"].split()
    assert "StrictHostKeyChecking=yes" in options
    assert "UserKnownHostsFile=/k/ssh/known_hosts" in options


def test_render_with_ssh_keys_installs_packages_and_ships_the_shim_archive() -> None:
    rendered = _render_on_machines()
    variables = rendered.inventory["all"]["vars"]
    assert variables["slurm_service_mode"] == "systemd"
    assert variables["slurm_install_packages"] is True
    assert variables["dcgm_shim_package_src"] == str(slurm_lab.shim_package("default"))
    assert variables["slurm_munge_key_src"] == "/k/munge.key"
    assert rendered.ssh is SSH_KEYS
    assert rendered.extravars["slurm_exporter_binary_src"] == "/cache/slurm_exporter"


def test_render_without_ssh_keys_stays_on_container_hosts() -> None:
    rendered = slurm_lab.render(load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, None)
    variables = rendered.inventory["all"]["vars"]
    assert rendered.ssh is None
    assert variables["ansible_connection"] == "community.docker.docker"
    assert "dcgm_shim_package_src" not in variables
    assert {spec.boot for spec in rendered.specs} == {"lab-daemon"}


def test_the_shim_archive_lives_in_the_labs_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    assert slurm_lab.shim_package("default") == tmp_path / "default" / "dcgm-shim.tar"


def _no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lab.kinds.slurm_lab.engine.engine_client", lambda: None)


def _engine_with(monkeypatch: pytest.MonkeyPatch, kinds: set[str]) -> list[tuple[object, str]]:
    asked: list[tuple[object, str]] = []

    def host_kinds(client: object, lab: str) -> set[str]:
        asked.append((client, lab))
        return kinds

    monkeypatch.setattr("lab.kinds.slurm_lab.engine.engine_client", lambda: ENGINE)
    monkeypatch.setattr("lab.kinds.slurm_lab.containers.host_kinds", host_kinds)
    return asked


def test_an_unknown_host_kind_is_refused_before_the_engine_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    def engine_client() -> None:
        raise AssertionError("the engine was asked")

    monkeypatch.setattr("lab.kinds.slurm_lab.engine.engine_client", engine_client)
    with pytest.raises(ProvisionError, match="choose one of container, systemd"):
        slurm_lab.host_kind(load(DEFAULT_BLUEPRINT), "vm")


@pytest.mark.parametrize("wanted", ["container", "systemd"])
def test_a_lab_without_an_engine_gets_the_kind_it_asks_for(
    monkeypatch: pytest.MonkeyPatch, wanted: str
) -> None:
    _no_engine(monkeypatch)
    assert slurm_lab.host_kind(load(DEFAULT_BLUEPRINT), wanted) == wanted


def test_systemd_hosts_are_refused_for_a_rack_blueprint(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_engine(monkeypatch)
    superpod = load(BLUEPRINTS_DIR / "superpod.yaml")
    assert superpod.racks
    with pytest.raises(ProvisionError, match="--hosts container") as refused:
        slurm_lab.host_kind(superpod, "systemd")
    assert "superpod" in str(refused.value)


def test_container_hosts_are_accepted_for_a_rack_blueprint(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_engine(monkeypatch)
    assert slurm_lab.host_kind(load(BLUEPRINTS_DIR / "superpod.yaml"), "container") == "container"


def test_a_lab_on_container_hosts_is_not_switched_to_systemd(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _engine_with(monkeypatch, {"container"})
    with pytest.raises(ProvisionError, match="runs on container hosts") as refused:
        slurm_lab.host_kind(load(DEFAULT_BLUEPRINT), "systemd")
    assert asked == [(ENGINE, "default")]
    assert "lab down --lab default" in str(refused.value)
    assert "keep --hosts container" in str(refused.value)


def test_a_lab_on_systemd_hosts_is_not_switched_to_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_with(monkeypatch, {"systemd"})
    with pytest.raises(ProvisionError, match="keep --hosts systemd"):
        slurm_lab.host_kind(load(DEFAULT_BLUEPRINT), "container")


@pytest.mark.parametrize("kind", ["container", "systemd"])
def test_a_running_lab_keeps_its_kind_of_host(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    _engine_with(monkeypatch, {kind})
    assert slurm_lab.host_kind(load(DEFAULT_BLUEPRINT), kind) == kind


def test_a_lab_with_no_containers_yet_may_take_either_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    _engine_with(monkeypatch, set())
    assert slurm_lab.host_kind(load(DEFAULT_BLUEPRINT), "systemd") == "systemd"
