"""Builders for the Run:ai construct tests: the shipped blueprint, tiny scheduler snapshots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lab.runai.headless import HeadlessRun, build
from lab.runai.scheduler import DepartmentSpec, Job, QueueSpec, Snapshot
from lab.spec.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, RunaiBlueprint, load

UNLIMITED = -1.0


def shipped() -> RunaiBlueprint:
    return load(DEFAULT_RUNAI_BLUEPRINT)


def shipped_data() -> dict[str, Any]:
    data = yaml.safe_load(DEFAULT_RUNAI_BLUEPRINT.read_text())
    assert isinstance(data, dict)
    return data


def fresh(tmp_path: Path, scenario: str = "baseline", seed: int = 0) -> HeadlessRun:
    return build(shipped(), scenario, tmp_path, seed=seed)


def queue(
    project: str, quota: float, weight: float = 1.0, limit: float = UNLIMITED, dept: str = "d"
) -> QueueSpec:
    return QueueSpec(project, dept, "p", quota, weight, limit)


def job(
    uid: str,
    project: str,
    *,
    gpus: int = 1,
    pods: int = 1,
    priority: int = 50,
    preemptible: bool | None = None,
    at: float = 0.0,
    placement: tuple[tuple[str, tuple[int, ...]], ...] = (),
) -> Job:
    return Job(
        uid,
        f"runai-{project}",
        uid,
        f"pg-{uid}",
        project,
        "p",
        priority,
        priority < 100 if preemptible is None else preemptible,
        pods,
        gpus,
        at,
        placement,
    )


def snapshot(
    queues: list[QueueSpec],
    nodes: dict[str, int],
    pending: list[Job],
    running: list[Job] = (),  # type: ignore[assignment]
    dept_quota: float = UNLIMITED,
) -> Snapshot:
    used: dict[str, set[int]] = {}
    for r in running:
        for node, gpus in r.placement:
            used.setdefault(node, set()).update(gpus)
    free = {
        n: ("p", tuple(g for g in range(count) if g not in used.get(n, set()))) for n, count in nodes.items()
    }
    depts = [
        DepartmentSpec(d, "p", dept_quota, 1.0, UNLIMITED) for d in sorted({q.department for q in queues})
    ]
    return Snapshot(queues, depts, free, pending, list(running))
