"""A bad workload section is rejected with the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.paths import BLUEPRINTS_DIR
from lab.spec import slurm_blueprint as blueprint
from lab.workload.plan import check_against

from .workload_testing import shipped_data, with_workload


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("name", ["default", "superpod"])
def test_shipped_workloads_check_out(name: str) -> None:
    path = BLUEPRINTS_DIR / f"{name}.yaml"
    spec = check_against(blueprint.load(path), str(path))
    assert spec.time_scale == 1, "shipped blueprints run at real time; compression is chosen per run"


@pytest.mark.parametrize(
    ("updates", "field", "fix"),
    [
        ({"durations.mean_s": 100}, "workload.durations: mean_s 100", "same trace row"),
        ({"queue.median_s": 0}, "workload.queue.median_s", "greater than 0"),
        (
            {"outcomes.by_count.failed": 0.2},
            "workload.outcomes.by_count: completed + cancelled + failed",
            "Fix",
        ),
        ({"outcomes.by_gpu_time.cancelled": 0}, "workload.outcomes.by_gpu_time", "Fix"),
        (
            {"outcomes.timeout_share_of_failed": 1.5},
            "workload.outcomes.timeout_share_of_failed",
            "less than 1",
        ),
        ({"sizes.median_gpus": 3}, "workload.sizes: median_gpus 3 is not a power of two", "Fix"),
        ({"sizes.mean_gpus": 2000}, "workload.sizes: mean_gpus 2000", "Fix"),
        ({"classes.0.share": 0.9}, "workload: classes: shares sum to 1.300", "Fix: rescale"),
        ({"classes.0.name": "gaming"}, "workload.classes.0.name", "'training', 'inference' or 'interactive'"),
        ({"time_scale": 0.5}, "workload.time_scale", "greater than or equal to 1"),
        ({"arrivals.peak_hour": 24}, "workload.arrivals.peak_hour", "less than 24"),
        ({"arrivals.rate": 3}, "workload.arrivals.rate: unknown field", "blueprints/default.yaml"),
    ],
)
def test_bad_fields_name_file_field_and_fix(
    tmp_path: Path, updates: dict[str, Any], field: str, fix: str
) -> None:
    source = _write(tmp_path, with_workload(shipped_data(), **updates))
    with pytest.raises(blueprint.BlueprintError) as raised:
        blueprint.load(source)
    message = str(raised.value)
    assert str(source) in message
    assert field in message
    assert fix in message


@pytest.mark.parametrize(
    ("updates", "field", "fix"),
    [
        ({"classes.0.partition": "gpux"}, "workload.classes.0.partition: 'gpux'", "Fix: use one of them"),
        ({"classes.1.accounts": ["finance"]}, "workload.classes.1.accounts: ['finance']", "Fix"),
        ({"sizes.mean_gpus": 600}, "workload: sizes.mean_gpus 600 is out of reach", "Fix: check max_gpus"),
    ],
)
def test_names_are_checked_against_the_blueprint(
    tmp_path: Path, updates: dict[str, Any], field: str, fix: str
) -> None:
    source = _write(tmp_path, with_workload(shipped_data(), **updates))
    with pytest.raises(blueprint.BlueprintError) as raised:
        check_against(blueprint.load(source), str(source))
    message = str(raised.value)
    assert str(source) in message and field in message and fix in message


def test_a_high_qos_share_needs_the_qos(tmp_path: Path) -> None:
    data = shipped_data()
    data["qos"] = []
    source = _write(tmp_path, data)
    with pytest.raises(
        blueprint.BlueprintError, match=r"high_qos_share: the blueprint declares no QOS 'high'"
    ):
        check_against(blueprint.load(source), str(source))


def test_a_blueprint_without_workload_says_what_to_add(tmp_path: Path) -> None:
    data = shipped_data()
    del data["workload"]
    source = _write(tmp_path, data)
    loaded = blueprint.load(source)  # the section is optional for `lab up`
    with pytest.raises(
        blueprint.BlueprintError, match=r"no workload section\. Fix: copy the `workload:` section"
    ):
        check_against(loaded, str(source))
