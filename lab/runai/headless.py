"""Run the construct without HTTP: N steps of a scenario, with every emitted text at hand.

This is what unit tests and benchmarks call, and what ``lab runai serve`` runs under its server::

    run = run_headless(load(DEFAULT_RUNAI_BLUEPRINT), "gpu-fault", steps=120, out_dir=tmp)
    text = main_metrics(run.sim)            # runai_*, kube_*, runai_node_nodepool
    kai = kai_metrics(run.sim, "default")   # one KAI shard (node pool)
    walk = fault_walk(run)                  # PromQL + expected rows of the documented join
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lab.runai import scenarios
from lab.runai.expfmt import render
from lab.runai.joins import Row, Walk, walk
from lab.runai.series_k8s import kai_samples, kube_samples
from lab.runai.series_runai import runai_samples
from lab.runai.simulation import Simulation
from lab.spec.runai_blueprint import RunaiBlueprint


def main_metrics(sim: Simulation) -> str:
    return render([*runai_samples(sim), *kube_samples(sim)])


def kai_metrics(sim: Simulation, pool: str) -> str:
    return render(kai_samples(sim, pool))


@dataclass(slots=True)
class HeadlessRun:
    sim: Simulation
    scenario: str
    hook: Callable[[Simulation], None] | None
    events: list[str] = field(default_factory=list)
    logs: dict[str, list[str]] = field(default_factory=dict)


def build(
    blueprint: RunaiBlueprint,
    scenario: str,
    out_dir: Path,
    *,
    seed: int = 0,
    epoch: float | None = None,
    keep_text: bool = True,
    event_sink: Callable[[str], None] | None = None,
    log_sink: Callable[[str, str], None] | None = None,
    dcgm_address_for: Callable[[str], str] | None = None,
) -> HeadlessRun:
    """A simulation with ``scenario`` installed; events/logs kept in memory when ``keep_text``."""
    events: list[str] = []
    logs: dict[str, list[str]] = {pool.name: [] for pool in blueprint.node_pools}

    def on_event(line: str) -> None:
        if keep_text:
            events.append(line)
        if event_sink is not None:
            event_sink(line)

    def on_log(pool: str, line: str) -> None:
        if keep_text:
            logs[pool].append(line)
        if log_sink is not None:
            log_sink(pool, line)

    kwargs = {} if epoch is None else {"epoch": epoch}
    sim = Simulation(
        blueprint,
        out_dir,
        seed=seed,
        event_sink=on_event,
        log_sink=on_log,
        dcgm_address_for=dcgm_address_for,
        **kwargs,
    )
    hook = scenarios.install(sim, scenario)
    return HeadlessRun(sim, scenario, hook, events, logs)


def run_headless(
    blueprint: RunaiBlueprint,
    scenario: str,
    *,
    steps: int,
    out_dir: Path,
    seed: int = 0,
    on_step: Callable[[Simulation], None] | None = None,
) -> HeadlessRun:
    """Advance ``steps`` steps of ``scenario`` with no HTTP; ``on_step`` sees the state after each."""
    run = build(blueprint, scenario, out_dir, seed=seed)
    for _ in range(steps):
        run.sim.step()
        if on_step is not None:
            on_step(run.sim)
    return run


def fault_walk(run: HeadlessRun, window: str = "1h") -> Walk:
    """PromQL and expected answer of the join walk for a gpu-fault run (after the fault)."""
    hook = run.hook
    if not isinstance(hook, scenarios.GpuFaultHook) or hook.fault is None:
        raise ValueError("fault_walk needs a gpu-fault run that has reached its fault time")
    fault = hook.fault
    w = fault.workload
    uuid = run.sim.dcgm.nodes[fault.node].gpus[fault.gpu].uuid
    row = Row(
        w.name,
        w.namespace,
        fault.pod,
        fault.node,
        str(fault.gpu),
        uuid,
        run.sim.nodes[fault.node].pool,
        str(fault.xid),
    )
    return walk(w.name, w.namespace, [row], window)
