"""The Slurm kind renders its lab once, before any container exists: containers, the Ansible
inventory with the lab's keys, and the lab's extra variables (the exporter's binary when built)."""

from pathlib import Path

import pytest

from lab import contract
from lab.blueprint.egress_spec import SlurmEgress
from lab.blueprint.slurm_blueprint import load
from lab.bringup import container_specs
from lab.bringup.keys import LabKeys
from lab.central import builds
from lab.kinds import slurm_lab
from lab.paths import DEFAULT_BLUEPRINT
from lab.workload import background

KEYS = LabKeys(Path("/k/munge.key"), Path("/k/jwt.key"), Path("/k/db.pass"))
# What every Slurm lab's nodes get: the health check's interval, and the GPUs' UUID file the shim writes.
NODE_VARS = {"dcgm_health_check_interval": 30, "dcgm_job_mapping_gpu_uuids": "/run/nvidia-gpu-uuids/%n.csv"}


def test_render_with_the_exporter() -> None:
    model = load(DEFAULT_BLUEPRINT)
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, Path("/cache/slurm_exporter"))
    assert rendered.specs == container_specs.slurm_containers(model)
    assert rendered.extravars == {
        **NODE_VARS,
        "slurm_exporter_binary_src": "/cache/slurm_exporter",
    }
    variables = rendered.inventory["all"]["vars"]
    assert variables["slurm_munge_key_src"] == "/k/munge.key"
    assert variables["slurmctld_jwt_key_src"] == variables["slurmdbd_jwt_key_src"] == "/k/jwt.key"
    assert [job["name"] for job in variables["prometheus_scrape_jobs"]] == ["slurm", "dcgm"]


def test_the_exporters_own_rules_go_to_prometheus_beside_the_labs() -> None:
    model = load(DEFAULT_BLUEPRINT)
    rules = [
        Path("/cache/rules/slurm_exporter-v1.8.4-alerts.yml"),
        Path("/cache/rules/slurm_exporter-v1.8.4-rules.yml"),
    ]
    rendered = slurm_lab.render(
        model, DEFAULT_BLUEPRINT, KEYS, Path("/cache/slurm_exporter"), exporter_rules=rules
    )
    assert rendered.extravars["prometheus_extra_rule_files"] == [str(path) for path in rules]
    quiet = rendered.inventory["all"]["vars"]["prometheus_alertmanager_quiet"]
    assert quiet == [['alertname="SlurmNodeWarning"', 'status=~".+[$]"']]


def test_render_without_the_exporter_scrapes_no_slurm_job() -> None:
    rendered = slurm_lab.render(load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, None)
    assert rendered.extravars == NODE_VARS
    jobs = rendered.inventory["all"]["vars"]["prometheus_scrape_jobs"]
    assert [job["name"] for job in jobs] == ["dcgm"]


def test_a_slurm_lab_loads_the_dcgm_slurm_and_egress_rules_and_keeps_its_alerts() -> None:
    model = load(DEFAULT_BLUEPRINT)
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, None)
    assert rendered.inventory["all"]["vars"]["prometheus_rule_areas"] == [
        "dcgm",
        "slurm",
        "targets",
        "egress-dcgm",
        "egress-slurm",
        "egress-targets",
    ]
    assert contract.alerts_dir(model.name) in rendered.state_dirs  # made before the bind mount needs it


def test_the_gateway_is_told_the_allow_list_the_labels_to_pseudonymise_and_the_job_ids_to_drop() -> None:
    model = load(DEFAULT_BLUEPRINT)
    children = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, None).inventory["all"]["children"]
    assert children["central"]["hosts"] == {"central": {"ansible_host": "lab-default-central"}}
    gateway = children["egress"]
    assert gateway["hosts"] == {"egress": {"ansible_host": "lab-default-egress"}}
    series = gateway["vars"]["egress_gateway_series"]
    # Every record of the three egress files, nothing else: 7 GPU records, 23 Slurm ones and the
    # Alertmanager's `up`.
    assert len(series) == len(set(series)) == 7 + 23 + 1
    assert "cluster:alertmanager_up:min" in series
    assert "Hostname_gpu_UUID:DCGM_FI_DEV_XID_ERRORS:max" in series
    assert "account:slurm_account_gpus_running:sum" in series
    assert not [name for name in series if name.count(":") != 2]
    assert gateway["vars"]["egress_gateway_pseudonymised_labels"] == ["user", "account", "users"]
    assert "hpc_job" in gateway["vars"]["egress_gateway_job_id_labels"]


def test_with_egress_off_nothing_of_the_fence_is_rendered() -> None:
    model = load(DEFAULT_BLUEPRINT).model_copy(update={"egress": SlurmEgress(enabled=False)})
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, None)
    assert rendered.inventory["all"]["vars"]["prometheus_rule_areas"] == ["dcgm", "slurm", "targets"]
    assert not {"egress", "central"} & set(rendered.inventory["all"]["children"])
    assert not [name for name in rendered.extravars if name.startswith(("egress_", "central_"))]


def test_cached_fence_binaries_go_in_with_the_lab_and_missing_ones_skip_the_roles() -> None:
    built = builds.CentralBinaries(
        Path("/c/victoria-metrics"),
        Path("/c/vmalert"),
        Path("/c/victoria-logs"),
        Path("/c/otelcol-lab"),
        Path("/c/manifest.yaml"),
        {},
    )
    model = load(DEFAULT_BLUEPRINT)
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, None, fence=built)
    assert rendered.extravars == {
        **NODE_VARS,
        "egress_gateway_binary_src": "/c/otelcol-lab",
        "central_store_victoria_metrics_src": "/c/victoria-metrics",
        "central_store_victoria_logs_src": "/c/victoria-logs",
        "central_store_vmalert_src": "/c/vmalert",
    }
    # Not built yet: the hosts are there, their roles skipped (ansible/fence.yml's `when`) until
    # `lab egress install` runs the fence's plays with the binaries.
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, None)
    assert rendered.extravars == NODE_VARS
    assert {"egress", "central"} <= set(rendered.inventory["all"]["children"])


def test_an_exporter_built_beside_the_bring_up_is_handed_to_provisioning_late() -> None:
    waited: list[bool] = []

    def binary() -> Path:
        waited.append(True)
        return Path("/cache/archive/slurm_exporter")

    rendered = slurm_lab.render(load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, binary)
    assert rendered.extravars == NODE_VARS
    assert waited == []  # rendering does not wait for the build
    assert rendered.late_vars is not None
    assert rendered.late_vars() == {"slurm_exporter_binary_src": "/cache/archive/slurm_exporter"}
    jobs = rendered.inventory["all"]["vars"]["prometheus_scrape_jobs"]
    assert [job["name"] for job in jobs] == ["slurm", "dcgm"]


def test_status_says_the_live_workload_waits_for_its_wheel_and_why_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    (tmp_path / "lab1").mkdir()
    monkeypatch.setattr(background, "running_pid", lambda lab: 42)
    monkeypatch.setattr(background, "submit_way", lambda lab: "pyslurm")
    assert slurm_lab.workload_fact("lab1") == "live through pyslurm (pid 42)"
    background.note_phase("lab1", "building pyslurm's wheel")
    line = slurm_lab.workload_fact("lab1")
    assert line.startswith(
        "live through pyslurm (pid 42), not submitting yet: building pyslurm's wheel (since "
    )
    assert line.endswith("; jobs start when it is done")
    background.note_phase("lab1", "pyslurm could not be had: no archive")
    monkeypatch.setattr(background, "running_pid", lambda lab: None)
    monkeypatch.setattr(background, "submit_way", lambda lab: None)
    assert slurm_lab.workload_fact("lab1").startswith("stopped: pyslurm could not be had: no archive (since ")
    background.note_phase("lab1", None)
    assert slurm_lab.workload_fact("lab1") == "stopped"


def test_a_missing_pyslurm_archive_stops_lab_up_before_anything_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slurm_lab.pyslurm_wheel, "cached", lambda: None)
    options = slurm_lab.SlurmUpOptions(pyslurm_source=tmp_path / "absent.tar.gz")
    with pytest.raises(slurm_lab.LiveWorkloadError, match=r"absent\.tar\.gz") as raised:
        slurm_lab._check_pyslurm(options)
    assert "--submit-via slurmrestd" in str(raised.value)
    slurm_lab._check_pyslurm(slurm_lab.SlurmUpOptions(pyslurm_source=tmp_path / "x", submit_via="slurmrestd"))
    slurm_lab._check_pyslurm(slurm_lab.SlurmUpOptions(pyslurm_source=tmp_path / "x", workload=False))
