"""The documented walk (failed workload -> pods -> GPUs -> nodes) on the gpu-fault run's series."""

from __future__ import annotations

import re
from pathlib import Path

from lab.exposition import parse_samples
from lab.runai.headless import fault_walk, main_metrics, run_headless
from lab.runai.joins import Series, evaluate
from lab.runai.simulation import Simulation
from lab.runai.sourced_families import ALL_FAMILIES

from .helpers import shipped

DCGM_NAMES = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_XID_ERRORS"}


def test_join_walk_finds_the_failed_pod_gpu_and_node(tmp_path: Path) -> None:
    history: list[list[Series]] = []

    def scrape(sim: Simulation) -> None:
        series = parse_samples(main_metrics(sim))
        for node in sim.dcgm.nodes.values():
            series += parse_samples(node.scrape())
        history.append(series)

    run = run_headless(shipped(), "gpu-fault", steps=120, out_dir=tmp_path, on_step=scrape)
    walk = fault_walk(run)
    window = int(3600 / run.sim.bp.clock.step_seconds)  # the walk's [1h]
    answer = evaluate(history[-window:], walk.expected[0].workload, walk.expected[0].namespace)
    assert answer == walk.expected
    row = answer[0]
    assert row.xid == "79" and row.nodepool == "default"
    assert row.uuid == run.sim.dcgm.nodes[row.node].gpus[int(row.gpu)].uuid


def test_walk_uses_only_emitted_names(tmp_path: Path) -> None:
    run = run_headless(shipped(), "gpu-fault", steps=100, out_dir=tmp_path)
    walk = fault_walk(run)
    text = walk.combined + " ".join(query for _, query in walk.steps)
    names = set(re.findall(r"\b(?:runai|kube|kai|DCGM)_[A-Za-z0-9_]+\b", text))
    assert names <= set(ALL_FAMILIES) | DCGM_NAMES
    assert "created_by_name" in ALL_FAMILIES["kube_pod_info"].labels
