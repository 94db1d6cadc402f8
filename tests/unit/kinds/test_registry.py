"""Lab kinds: a blueprint says its kind, the registry never guesses, and every shipped blueprint's
`lab validate` line is what the kind says of it."""

from pathlib import Path

import pytest

from lab import kinds
from lab.blueprint.slurm_blueprint import BlueprintError
from lab.paths import BLUEPRINTS_DIR


@pytest.mark.parametrize(
    ("name", "kind"), [("default.yaml", "slurm"), ("superpod.yaml", "slurm"), ("runai.yaml", "runai")]
)
def test_each_shipped_blueprint_has_its_kind(name: str, kind: str) -> None:
    assert kinds.kind_of(BLUEPRINTS_DIR / name).name == kind


def test_an_unknown_kind_names_the_file_and_the_kinds(tmp_path: Path) -> None:
    path = tmp_path / "lab.yaml"
    path.write_text("kind: lsf\nname: x\n")
    with pytest.raises(BlueprintError, match=r"lab\.yaml: kind: 'lsf' is not a lab kind.*slurm, runai"):
        kinds.kind_of(path)


def test_a_runai_blueprint_without_its_kind_is_not_taken_for_slurm(tmp_path: Path) -> None:
    text = (BLUEPRINTS_DIR / "runai.yaml").read_text().replace("kind: runai", "")
    path = tmp_path / "runai.yaml"
    path.write_text(text)
    with pytest.raises(BlueprintError, match="node_pools"):
        kinds.load(path)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        (
            "default.yaml",
            "lab 'default', 4 nodes (per-node), 32 GPUs, 2 partitions, 3 accounts, 8 users",
        ),
        (
            "superpod.yaml",
            "lab 'superpod', 256 nodes (racks), 2048 GPUs, 3 partitions, 32 accounts, 160 users",
        ),
        ("runai.yaml", "Run:ai lab 'runai-default', 2 node pools, 8 nodes"),
    ],
)
def test_validate_lines(name: str, line: str) -> None:
    assert kinds.load(BLUEPRINTS_DIR / name).summary(name) == line
