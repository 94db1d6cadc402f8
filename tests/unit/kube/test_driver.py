"""The driver's ``/metrics`` text of a busy cluster: every family and label it renders is sourced."""

from __future__ import annotations

from pathlib import Path

from lab.capture import signals
from lab.exposition import parse, parse_samples
from lab.kube.driver import bound_pods, runai_metrics
from lab.paths import PROJECT_ROOT
from lab.runai import RUNAI_FAMILIES

from .api_objects import NODE, VICTIM, WAITING, busy


def test_every_family_and_label_the_driver_renders_is_sourced(tmp_path: Path) -> None:
    families = parse(runai_metrics(busy(tmp_path).look()))
    table = {family.name: family for family in RUNAI_FAMILIES}
    for name, family in families.items():
        assert name in table, f"{name} is not in lab.runai.sourced_families (signals/runai.md)"
        assert (family.type, family.help) == (table[name].type, table[name].help)
        for sample in family.samples:
            assert set(sample.labels) == set(table[name].labels), f"{name}: {sample.labels}"
    # The busy cluster emits everything in the table: the table holds nothing the driver never writes.
    assert set(families) == set(table)
    documented = signals.parse((PROJECT_ROOT / "signals" / "runai.md").read_text(encoding="utf-8"))
    assert set(table) <= set(documented.families)


def test_the_running_workload_holds_its_gpu_and_the_pending_one_waits(tmp_path: Path) -> None:
    samples = parse_samples(runai_metrics(busy(tmp_path).look()))

    def by(family: str, label: str, node: str | None = None) -> dict[str, float]:
        return {
            labels[label]: value
            for name, labels, value in samples
            if name == family and node in (None, labels.get("node"))
        }

    assert by("runai_allocated_gpu_count_per_workload", "workload_name") == {VICTIM: 1.0}
    assert by("runai_requested_gpus_per_workload", "workload_name") == {VICTIM: 1.0, WAITING: 8.0}
    assert by("runai_allocated_gpu_count_per_gpu", "gpu", NODE) == {str(g): float(g == 0) for g in range(8)}


def test_a_bound_pod_carries_its_owner_and_its_container(tmp_path: Path) -> None:
    cluster = busy(tmp_path)
    (victim,) = [p for p in bound_pods(cluster.pods) if p.node == NODE]
    assert (victim.workload, victim.container) == (VICTIM, "main")
