"""The blueprint's `egress:` section in both kinds: on by default with each kind's labels; every mistake
comes through the strict loader naming the file, the field and the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.blueprint import runai_blueprint, slurm_blueprint
from lab.blueprint.egress_spec import RUNAI_DEFAULT, RUNAI_LABELS, SLURM_DEFAULT, SLURM_LABELS, SlurmEgress
from lab.paths import BLUEPRINTS_DIR

Loader = Callable[[Path], Any]
KINDS: list[tuple[str, Loader, type[Exception]]] = [
    ("default.yaml", slurm_blueprint.load, slurm_blueprint.BlueprintError),
    ("runai.yaml", runai_blueprint.load, runai_blueprint.RunaiBlueprintError),
]


def with_egress(tmp_path: Path, shipped: str, egress: Any) -> Path:
    data = yaml.safe_load((BLUEPRINTS_DIR / shipped).read_text())
    data["egress"] = egress
    path = tmp_path / shipped
    path.write_text(yaml.safe_dump(data))
    return path


def test_each_kind_is_on_with_its_defaults() -> None:
    slurm = slurm_blueprint.load(BLUEPRINTS_DIR / "default.yaml").egress
    runai = runai_blueprint.load(runai_blueprint.DEFAULT_RUNAI_BLUEPRINT).egress
    assert slurm.enabled and slurm.pseudonymised_labels == SLURM_DEFAULT == ("user", "account", "users")
    assert runai.enabled and runai.pseudonymised_labels == RUNAI_DEFAULT
    assert {"project", "department", "namespace", "pod", "workload_name"} <= set(RUNAI_DEFAULT)
    assert SlurmEgress() == slurm


def test_the_defaults_are_labels_of_the_kind() -> None:
    assert set(SLURM_DEFAULT) <= set(SLURM_LABELS) and set(RUNAI_DEFAULT) <= set(RUNAI_LABELS)
    stays = {"partition", "nodepool", "node", "Hostname", "gpu", "UUID"}
    assert not stays & (set(SLURM_DEFAULT) | set(RUNAI_DEFAULT)), "what stays is not pseudonymised by default"


@pytest.mark.parametrize(("shipped", "load", "error"), KINDS)
def test_a_site_adds_labels_and_may_turn_egress_off(
    tmp_path: Path, shipped: str, load: Loader, error: type[Exception]
) -> None:
    defaults = SLURM_DEFAULT if shipped == "default.yaml" else RUNAI_DEFAULT
    model = load(with_egress(tmp_path, shipped, {"pseudonymised_labels": [*defaults, "node"]}))
    assert model.egress.pseudonymised_labels == (*defaults, "node")
    assert load(with_egress(tmp_path, shipped, {"enabled": False})).egress.enabled is False
    assert load(with_egress(tmp_path, shipped, {})).egress.pseudonymised_labels == defaults


@pytest.mark.parametrize(("shipped", "load", "error"), KINDS)
@pytest.mark.parametrize(
    ("egress", "field", "fix"),
    [
        (True, "egress", "a mapping is expected, not a boolean. Fix: `egress: {enabled: true"),
        (None, "egress", "a mapping is expected, not empty (null)"),
        (
            {"enabled": "yes"},
            "egress.enabled",
            "must be true or false, not a string 'yes'. Fix: `enabled: true`",
        ),
        ({"enabled": 1}, "egress.enabled", "must be true or false, not a number 1"),
        ({"pseudonymised_labels": "user"}, "egress.pseudonymised_labels", "must be a list of label names"),
        ({"pseudonymised_labels": {"user": 1}}, "egress.pseudonymised_labels", "not a mapping"),
        ({"pseudonymised_labels": ["user", 3]}, "egress.pseudonymised_labels", "item 1 is a number 3"),
        ({"pseudonymised_labels": ["hpc_job"]}, "egress.pseudonymised_labels", "'hpc_job': not a label"),
        ({"pseudonymised_labels": []}, "egress.pseudonymised_labels", "leaves out"),
        ({"pseudonymized_labels": []}, "egress.pseudonymized_labels", "unknown field"),
    ],
)
def test_bad_input_names_the_file_the_field_and_the_fix(
    tmp_path: Path, shipped: str, load: Loader, error: type[Exception], egress: Any, field: str, fix: str
) -> None:
    path = with_egress(tmp_path, shipped, egress)
    with pytest.raises(error) as raised:
        load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ")
    assert f"  - {field}: " in message
    assert fix in message


def test_an_unknown_label_lists_the_kinds_labels(tmp_path: Path) -> None:
    with pytest.raises(slurm_blueprint.BlueprintError) as raised:
        slurm_blueprint.load(with_egress(tmp_path, "default.yaml", {"pseudonymised_labels": ["pod"]}))
    assert f"Fix: use labels of {', '.join(SLURM_LABELS)}" in str(raised.value)


def test_a_default_left_out_is_named_with_the_fix(tmp_path: Path) -> None:
    path = with_egress(
        tmp_path, "runai.yaml", {"pseudonymised_labels": [label for label in RUNAI_DEFAULT if label != "pod"]}
    )
    with pytest.raises(runai_blueprint.RunaiBlueprintError) as raised:
        runai_blueprint.load(path)
    message = str(raised.value)
    assert "leaves out pod: their values are real names" in message
    assert "Fix: keep every one of" in message and "enabled: false" in message


def test_a_label_listed_twice_is_refused(tmp_path: Path) -> None:
    path = with_egress(tmp_path, "default.yaml", {"pseudonymised_labels": [*SLURM_DEFAULT, "user"]})
    with pytest.raises(slurm_blueprint.BlueprintError, match=r"user listed more than once\. Fix: list each"):
        slurm_blueprint.load(path)
