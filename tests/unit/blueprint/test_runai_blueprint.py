"""The Run:ai blueprint: the shipped file loads, and every mistake names file, field and fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.blueprint.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, RunaiBlueprint, RunaiBlueprintError, load


def shipped() -> RunaiBlueprint:
    return load(DEFAULT_RUNAI_BLUEPRINT)


def shipped_data() -> dict[str, Any]:
    data = yaml.safe_load(DEFAULT_RUNAI_BLUEPRINT.read_text())
    assert isinstance(data, dict)
    return data


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "runai.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_shipped_blueprint_loads() -> None:
    bp = shipped()
    assert sum(p.nodes * p.gpus_per_node for p in bp.node_pools) == 64
    assert {p.name for p in bp.projects} == {"team-a", "team-b", "team-c"}
    # No ports: in the blueprint, the contract's loopback ports beside a Slurm lab's.
    assert (bp.ports.prometheus, bp.ports.alertmanager, bp.ports.kube_apiserver) == (9190, 9193, 16443)


def test_a_class_that_names_no_pool_may_run_in_its_projects_priority_lists() -> None:
    bp = shipped()
    assert [p.name for p in bp.pools_of(bp.workload_class("infer"))] == ["default", "inference"]
    assert [p.name for p in bp.pools_of(bp.workload_class("train"))] == ["default"]


def test_a_project_without_a_priority_list_defaults_to_its_pools_in_blueprint_order() -> None:
    data = shipped_data()
    data["projects"][2].pop("default_node_pools")
    bp = RunaiBlueprint.model_validate(data)
    assert bp.node_pool_priority("team-c") == ["default", "inference"]
    assert shipped().node_pool_priority("team-c") == ["inference", "default"]
    assert shipped().node_pool_priority("team-a") == ["default"]


@pytest.mark.parametrize(
    ("change", "field", "fix"),
    [
        (lambda d: d.update(colour="blue"), "colour", "unknown field"),
        (lambda d: d["workloads"][0].update(priority_class="urgent"), "workloads.0", "use one of train"),
        (
            lambda d: d["workloads"][0].update(projects=["team-z"]),
            "(top level)",
            "unknown projects ['team-z']",
        ),
        (lambda d: d["workloads"][0]["gpus_per_pod"].update({1: 0.5}), "workloads.0", "must add up to 1"),
        (lambda d: d["projects"][0].update(department="sales"), "(top level)", "department 'sales'"),
        (
            lambda d: d["projects"][0]["quotas"]["default"].update(limit=2),
            "projects.0.quotas.default",
            "use -1",
        ),
        (lambda d: d["projects"][0]["quotas"].update(gpu_pool={"gpu": 1}), "(top level)", "gpu_pool"),
        (lambda d: d["scenarios"]["gpu_fault"].update(workload_class="nope"), "(top level)", "gpu_fault"),
        (
            lambda d: d["projects"][0].update(default_node_pools=["inference"]),
            "(top level)",
            "list only pools of its quotas (['default'])",
        ),
        (
            lambda d: d["projects"][2].update(default_node_pools=["default", "default"]),
            "(top level)",
            "duplicate projects.team-c.default_node_pools names: ['default']",
        ),
        (
            lambda d: d["projects"][2].update(default_node_pools=[]),
            "projects.2.default_node_pools",
            "at least 1",
        ),
        (lambda d: d.pop("resources_per_gpu"), "resources_per_gpu", "required field is missing"),
        (lambda d: d.update(ports={"prometheus": 9190, "runai": 9190}), "ports", "give each its own"),
        (lambda d: d.update(ports={"prometheus": 80}), "ports.prometheus", "greater than or equal to 1024"),
    ],
)
def test_bad_blueprint_names_file_field_and_fix(tmp_path: Path, change: Any, field: str, fix: str) -> None:
    data = shipped_data()
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(RunaiBlueprintError) as failure:
        load(path)
    text = str(failure.value)
    assert str(path) in text
    assert field in text
    assert fix in text


def test_unreadable_and_non_mapping_files(tmp_path: Path) -> None:
    with pytest.raises(RunaiBlueprintError, match="cannot read"):
        load(tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(RunaiBlueprintError, match="YAML mapping"):
        load(tmp_path / "list.yaml")
