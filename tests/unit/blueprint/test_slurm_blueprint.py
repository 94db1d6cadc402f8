import copy
import re
from pathlib import Path
from typing import Any

import pytest

from lab.blueprint import slurm_blueprint as blueprint
from lab.paths import BLUEPRINTS_DIR

RUNAI_BLUEPRINTS = {"runai.yaml"}  # the Run:ai construct's own schema (lab/blueprint/runai_blueprint.py)


@pytest.mark.parametrize("path", sorted(BLUEPRINTS_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_blueprint_is_valid(path: Path) -> None:
    if path.name in RUNAI_BLUEPRINTS:
        from lab.blueprint.runai_blueprint import load as load_runai

        assert load_runai(path) is not None
        return
    model = blueprint.load(path)
    assert model.nodes.count >= 1


def test_every_shipped_number_has_a_basis_comment() -> None:
    """Plausibility rule: a number in a shipped blueprint sits under or beside a comment."""
    for path in sorted(BLUEPRINTS_DIR.glob("*.yaml")):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            key, _, value = line.strip().lstrip("- ").partition(":")
            value = value.strip().strip('"')
            not_a_rate = key in ("uid", "first_uid", "slurmrestd", "prometheus")  # ids and ports
            if not value or not value[0].isdigit() or not_a_rate:
                continue
            above = [lines[i].strip() for i in range(max(0, index - 4), index)]
            assert "#" in line or any(a.startswith("#") for a in above), f"{path.name}:{index + 1}: {line}"


def test_default_shape_is_a_dgx_h100(default_data: dict[str, Any]) -> None:
    model = blueprint.parse(default_data)
    assert model.nodes.names == ["dgx-001", "dgx-002", "dgx-003", "dgx-004"]
    assert model.nodes.shape.cpus == 112
    assert model.racks == {}
    assert model.node_containers == model.nodes.names


def test_racks_split_nodes_and_give_each_slurmd_a_port(default_data: dict[str, Any]) -> None:
    data = copy.deepcopy(default_data)
    data["nodes"]["count"] = 20
    data["topology"] = {"layout": "racks", "nodes_per_rack": 8, "first_slurmd_port": 17001}
    model = blueprint.parse(data)
    assert list(model.racks) == ["rack01", "rack02", "rack03"]
    assert model.racks["rack03"] == ["dgx-017", "dgx-018", "dgx-019", "dgx-020"]
    assert model.slurmd_port("dgx-001") == 17001
    assert model.slurmd_port("dgx-020") == 17020
    assert model.node_container_host("dgx-009") == "rack02"


def test_generated_users_spread_over_accounts(default_data: dict[str, Any]) -> None:
    data = copy.deepcopy(default_data)
    data["users"] = []
    data["generated_users"] = {"count": 6, "prefix": "u", "first_uid": 5000}
    users = blueprint.parse(data).all_users
    assert [u.name for u in users][:2] == ["u001", "u002"]
    assert [u.account for u in users][:4] == ["llm-pretrain", "vision", "inference", "llm-pretrain"]
    assert len({u.uid for u in users}) == 6


def _break(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(data)
    *parents, last = path.split(".")
    target: Any = broken
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return broken


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("nodes.count", 0, "nodes.count"),
        ("nodes.shape.gpus", 17, "nodes.shape.gpus"),
        ("nodes.shape.gpu_type", "H100!", "nodes.shape.gpu_type"),
        ("nodes.shape", KeyError, "nodes.shape: required field is missing"),
        ("name", "Bad Name", "name"),
        ("partitions.1.nodes", "dgx-[009-010]", "does not declare"),
        ("partitions.1.nodes", "dgx-[002-001]", "runs backwards"),
        ("partitions.1.default", True, "only one partition may be default"),
        ("partitions.0.max_time", "two days", "partitions.0.max_time"),
        ("users.0.account", "nobody", "not in"),
        ("users.1.uid", 2001, "duplicate uid"),
        ("slurm.colour", "blue", "slurm.colour: unknown field"),
        ("topology", {"layout": "racks"}, "nodes_per_rack"),
        ("topology", {"layout": "per-node", "nodes_per_rack": 4}, "only to layout 'racks'"),
        ("ports.slurmrestd", 80, "ports.slurmrestd"),
        ("slurm.version", "25.11", 'not a release the lab runs; use one of "24.11", "26.05"'),
        ("slurm.native_metrics", True, "Slurm 24.11 has no metrics/openmetrics plugin"),
    ],
)
def test_bad_blueprints_name_the_field_and_the_fix(
    default_data: dict[str, Any], write_yaml: Any, path: str, value: Any, expected: str
) -> None:
    source = write_yaml(_break(default_data, path, value))
    with pytest.raises(blueprint.BlueprintError) as raised:
        blueprint.load(source)
    message = str(raised.value)
    assert str(source) in message
    assert expected in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [("name: [unclosed", "not valid YAML"), ("- a list", "a blueprint is a YAML mapping")],
)
def test_unreadable_files_are_explained(write_yaml: Any, text: str, expected: str) -> None:
    with pytest.raises(blueprint.BlueprintError, match=expected):
        blueprint.load(write_yaml(text))


def test_missing_file_is_explained(tmp_path: Path) -> None:
    with pytest.raises(blueprint.BlueprintError, match="cannot read blueprint"):
        blueprint.load(tmp_path / "nope.yaml")


def test_site_state_fields_of_the_default_blueprint(default_data: dict[str, Any]) -> None:
    model = blueprint.parse(default_data)
    assert model.drained_nodes == ["dgx-003"]
    assert [lic.slurm_name for lic in model.licenses] == ["scratch", "matlab@flexlm"]
    assert [(r.name, r.start, r.flags) for r in model.reservations] == [
        ("rma-dgx-003", "now", ["MAINT", "IGNORE_JOBS"]),
        ("monthly-maint", "now+4weeks", ["MAINT", "IGNORE_JOBS"]),
    ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("drains", [{"nodes": "dgx-009", "reason": "repair"}], "drains[0].nodes names nodes"),
        ("drains", [{"nodes": "dgx-001", "reason": "a|b"}], "drains.0.reason"),
        ("drains", [{"nodes": "dgx-[001", "reason": "repair"}], "drains[0].nodes"),
        (
            "reservations",
            [{"name": "m", "nodes": "ALL", "start": "tomorrow", "duration": "04:00:00"}],
            "reservations.0.start",
        ),
        (
            "reservations",
            [{"name": "m", "nodes": "ALL", "start": "now", "duration": "4h"}],
            "reservations.0.duration",
        ),
        (
            "reservations",
            [{"name": "m", "nodes": "ALL", "start": "now", "duration": "60", "flags": ["SPEC_NODES"]}],
            "reservations.0.flags.0",
        ),
        ("licenses", [{"name": "scratch", "count": 1}, {"name": "scratch", "count": 2}], "license"),
        ("licenses", [{"name": "scratch", "count": 0}], "licenses.0.count"),
    ],
)
def test_bad_site_state_names_the_field(
    default_data: dict[str, Any], field: str, value: Any, message: str
) -> None:
    data = copy.deepcopy(default_data)
    data[field] = value
    with pytest.raises(blueprint.BlueprintError, match=re.escape(message)):
        blueprint.parse(data, source="bad.yaml")


def test_a_remote_license_may_share_a_local_ones_name(default_data: dict[str, Any]) -> None:
    data = copy.deepcopy(default_data)
    data["licenses"] = [{"name": "matlab", "count": 1}, {"name": "matlab", "server": "flexlm", "count": 2}]
    assert [lic.slurm_name for lic in blueprint.parse(data).licenses] == ["matlab", "matlab@flexlm"]


def test_a_blueprint_names_its_slurm_release_and_26_05_serves_its_own_metrics(
    default_data: dict[str, Any],
) -> None:
    default = blueprint.parse(default_data)
    assert (default.slurm.version, default.slurm.release.debian_suite) == ("24.11", "trixie")
    assert not default.slurm.serves_native_metrics
    newer = blueprint.parse(_break(default_data, "slurm.version", "26.05"))
    assert (newer.slurm.release.debian_suite, newer.slurm.release.deb_version) == ("forky", "26.05.5-1")
    assert newer.slurm.serves_native_metrics
    switched_off = _break(_break(default_data, "slurm.version", "26.05"), "slurm.native_metrics", False)
    assert not blueprint.parse(switched_off).slurm.serves_native_metrics
