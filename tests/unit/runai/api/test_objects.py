"""Workloads as the API shows them; filterBy terms compare numbers and dates as numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.runai.api import objects
from lab.runai.api.params import ApiError, Filter

from ...kube.api_objects import BP, VICTIM, VICTIM_UID, busy


def test_a_workload_carries_the_schemas_fields_from_its_job(tmp_path: Path) -> None:
    victim = busy(tmp_path).look().workloads[VICTIM_UID]
    shown = objects.workload(victim, BP.cluster_id)
    assert (shown["id"], shown["name"], shown["namespace"], shown["phase"]) == (
        VICTIM_UID,
        VICTIM,
        "runai-team-a",
        "Running",
    )
    assert shown["createdAt"] == "2026-12-02T11:49:10.000Z" and shown["completedAt"] is None
    assert shown["podsRequestedResources"]["gpu"] == {"request": 1}


@pytest.mark.parametrize(
    ("term", "matched"),
    [
        (Filter("allocatedGPU", ">=", "1"), True),
        (Filter("allocatedGPU", "<=", "0"), False),
        (Filter("createdAt", ">=", "2026-12-02T11:00:00Z"), True),
        (Filter("name", "=^", "train-"), True),
        (Filter("name", "!@", "0001"), False),
        (Filter("projectName", "==", "team-a"), True),
    ],
)
def test_filter_terms(tmp_path: Path, term: Filter, matched: bool) -> None:
    victim = busy(tmp_path).look().workloads[VICTIM_UID]
    assert objects.matches(victim, BP.cluster_id, term) is matched


def test_a_text_operator_on_a_number_is_a_400(tmp_path: Path) -> None:
    victim = busy(tmp_path).look().workloads[VICTIM_UID]
    with pytest.raises(ApiError, match="takes ==, !=, <= and >= only"):
        objects.matches(victim, BP.cluster_id, Filter("allocatedGPU", "=@", "1"))
