"""The Slurm kind renders its lab once, before any container exists: containers, the Ansible
inventory with the lab's keys, and the lab's extra variables (the exporter's binary when built)."""

from pathlib import Path

from lab import contract
from lab.blueprint.slurm_blueprint import load
from lab.bringup import container_specs
from lab.bringup.keys import LabKeys
from lab.kinds import slurm_lab
from lab.paths import DEFAULT_BLUEPRINT

KEYS = LabKeys(Path("/k/munge.key"), Path("/k/jwt.key"), Path("/k/db.pass"))


def test_render_with_the_exporter() -> None:
    model = load(DEFAULT_BLUEPRINT)
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, Path("/cache/slurm_exporter"))
    assert rendered.specs == container_specs.slurm_containers(model)
    assert rendered.extravars == {
        "dcgm_health_check_interval": 30,
        "slurm_exporter_binary_src": "/cache/slurm_exporter",
    }
    variables = rendered.inventory["all"]["vars"]
    assert variables["slurm_munge_key_src"] == "/k/munge.key"
    assert variables["slurmctld_jwt_key_src"] == variables["slurmdbd_jwt_key_src"] == "/k/jwt.key"
    assert [job["name"] for job in variables["prometheus_scrape_jobs"]] == ["slurm", "dcgm"]


def test_render_without_the_exporter_scrapes_no_slurm_job() -> None:
    rendered = slurm_lab.render(load(DEFAULT_BLUEPRINT), DEFAULT_BLUEPRINT, KEYS, None)
    assert rendered.extravars == {"dcgm_health_check_interval": 30}
    jobs = rendered.inventory["all"]["vars"]["prometheus_scrape_jobs"]
    assert [job["name"] for job in jobs] == ["dcgm"]


def test_a_slurm_lab_loads_the_dcgm_and_slurm_rules_and_keeps_its_alerts() -> None:
    model = load(DEFAULT_BLUEPRINT)
    rendered = slurm_lab.render(model, DEFAULT_BLUEPRINT, KEYS, None)
    assert rendered.inventory["all"]["vars"]["prometheus_rule_areas"] == ["dcgm", "slurm"]
    assert contract.alerts_dir(model.name) in rendered.state_dirs  # made before the bind mount needs it
