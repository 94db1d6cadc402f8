"""A bad workload section is rejected with the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.blueprint import slurm_blueprint as blueprint
from lab.paths import BLUEPRINTS_DIR
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
        ({"trace.run_s.mean": 100}, "workload.trace.run_s: mean 100 is below median 204", "same trace row"),
        ({"trace.queue_s.median": -1}, "workload.trace.queue_s.median", "greater than or equal to 0"),
        (
            {"trace.outcomes.by_count.failed": 0.5},
            "workload.trace.outcomes.by_count: completed + cancelled + failed",
            "Fix",
        ),
        ({"trace.outcomes.by_gpu_time.cancelled": 0}, "workload.trace.outcomes.by_gpu_time", "Fix"),
        ({"timeout_share_of_failed": 1.5}, "workload.timeout_share_of_failed", "less than 1"),
        ({"trace.sizes.1.gpus": 1}, "workload.trace: sizes: GPU counts [1, 1, 4", "one row per size"),
        ({"trace.sizes.0.jobs": 0.9}, "workload.trace: sizes: the jobs shares sum to 1.3816", "one figure"),
        ({"trace.sizes.0.gpu_time": 0}, "the 1-GPU row has jobs 0.5184 and gpu_time 0", "Fix: drop"),
        ({"trace.run_cdf.3": 0.01}, "workload.trace: run_cdf: must not fall", "as fractions"),
        (
            {"trace.run_cdf.20": 0.998, "trace.run_cdf.21": 0.998},
            "workload.trace: run_cdf: ends at 0.998, not 1",
            "Fix: extend",
        ),
        ({"trace.gpus": 0}, "workload.trace.gpus", "greater than 0"),
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
        (
            {"trace.run_s.mean": 20000},
            "workload: trace.run_s.mean: the sizes and gpu_seconds imply 13,010.5, "
            "the trace publishes 20,000.0",
            "Fix: copy every trace figure from the same cluster",
        ),
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
