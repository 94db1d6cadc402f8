"""The journeys' dashboards (Grafana's JSON, shipped with the rules): each panel queries the lab's
Prometheus through the dashboard's datasource variable, uses only the template variables it defines,
and names only series that signals/ documents or the shipped rules record. tests/lab/test_journeys.py
evaluates every panel against the running lab while the journey's fault is in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lab.paths import ANSIBLE_DIR, PROJECT_ROOT

DASHBOARDS = ANSIBLE_DIR / "roles" / "prometheus" / "files" / "dashboards"
RULES = ANSIBLE_DIR / "roles" / "prometheus" / "files" / "rules"
FILES = sorted(DASHBOARDS.glob("*.json"))
SERIES = re.compile(
    r"\b(DCGM_[A-Z0-9_]+|slurm_[a-z0-9_]+|kai_[a-z0-9_]+|runai_[a-z0-9_]+|kube_[a-z0-9_]+|[a-z_]+:[a-z0-9_:]+)\b"
)
BRACES = re.compile(r"`([a-z_]*)\{([a-z0-9_,]+)\}([a-z_]*)`")  # `kai_queue_allocated_{gpus,cpu_cores}`


def _load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_there_is_a_dashboard_per_journey_the_lab_tests() -> None:
    assert [p.name for p in FILES] == [
        "journey-failed-job-gpu-fault-runai.json",
        "journey-failed-job-gpu-fault.json",
        "journey-slow-job-starved-runai.json",
        "journey-slow-job-starved.json",
        "journey-slow-job-throttled-gpu-runai.json",
        "journey-slow-job-throttled-gpu.json",
    ]
    assert len({_load(p)["uid"] for p in FILES}) == len(FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_panel_queries_through_the_datasource_variable_with_defined_variables(path: Path) -> None:
    document = _load(path)
    defined = {v["name"] for v in document["templating"]["list"]}
    assert "datasource" in defined
    for panel in document["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            used = set(re.findall(r"\$\{?(\w+)\}?", target["expr"]))
            assert used <= defined, f"{panel['title']}: undefined {used - defined}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_series_a_panel_names_is_documented_or_recorded(path: Path) -> None:
    documented = "".join(p.read_text() for p in (PROJECT_ROOT / "signals").glob("*.md"))
    documented += " ".join(
        f"`{head}{alternative}{tail}`"
        for head, alternatives, tail in BRACES.findall(documented)
        for alternative in alternatives.split(",")
    )
    recorded = "".join(p.read_text() for p in RULES.glob("*.yml"))
    for panel in _load(path)["panels"]:
        for target in panel["targets"]:
            for name in SERIES.findall(target["expr"]):
                assert f"`{name}`" in documented or f"record: {name}" in recorded, f"{panel['title']}: {name}"
