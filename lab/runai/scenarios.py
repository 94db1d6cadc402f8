"""Failure modes (``--scenario``): scripted submissions and faults on top of the baseline mix.

Each scenario is a hook the simulation runs every step before the scheduling sessions; its numbers
live in the blueprint's ``scenarios`` section. Baseline arrivals keep running underneath.

- ``quota-exhaustion``: one project floods a non-preemptible class; once its non-preemptible
  allocation reaches its quota, KAI's capacity policy keeps the rest Pending with
  ``NonPreemptibleOverQuota`` and the backlog grows.
- ``preemption-storm``: one project borrows every free GPU of a pool with preemptible 1-GPU work
  (over quota); later another project submits its in-quota share at once and KAI reclaims: many
  Evict events, pods deleted and recreated, DCGM pod labels churn.
- ``gpu-fault``: a long training workload starts first; at the fault time an XID hits one of its GPUs
  (written to the shim's fault dir), the pod's container fails and the workload ends Failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lab.runai.arrivals import poisson
from lab.runai.cluster_state import Phase, Workload
from lab.runai.simulation import Simulation
from lab.spec.runai_blueprint import WorkloadClass

LONG_RUN_S = 30 * 86400.0  # scripted borrowers/victims run for the whole scenario


@dataclass(slots=True)
class FaultRecord:
    """What the gpu-fault scenario did; the join walk's expected answer comes from this."""

    workload: Workload
    pod: str
    pod_uid: str
    node: str
    gpu: int
    xid: int
    at: float


@dataclass(slots=True)
class GpuFaultHook:
    victim: Workload | None = None
    fault: FaultRecord | None = None

    def __call__(self, sim: Simulation) -> None:
        spec = sim.bp.scenarios.gpu_fault
        wclass = sim.bp.workload_class(spec.workload_class)
        if self.victim is None:
            self.victim = sim.submit(
                sim.arrivals.make(
                    wclass, sim.t, project=wclass.projects[0], run_seconds=LONG_RUN_S, will_fail=False
                )
            )
        if self.fault is None and sim.t >= spec.at_s and self.victim.phase is Phase.RUNNING:
            pod = sorted(self.victim.live_pods(), key=lambda p: p.rank)[0]
            assert pod.node is not None
            gpu = pod.gpus[0]
            self.fault = FaultRecord(self.victim, pod.name, pod.uid, pod.node, gpu, spec.xid, sim.now())
            sim.fail_on_xid(self.victim, pod.node, gpu, spec.xid)


@dataclass(slots=True)
class QuotaExhaustionHook:
    def __call__(self, sim: Simulation) -> None:
        spec = sim.bp.scenarios.quota_exhaustion
        if sim.t < spec.start_s:
            return
        wclass = sim.bp.workload_class(spec.workload_class)
        for _ in range(poisson(sim.rng, spec.rate_per_hour * sim.bp.clock.step_seconds / 3600.0)):
            sim.submit(sim.arrivals.make(wclass, sim.t, project=spec.project))


@dataclass(slots=True)
class PreemptionStormHook:
    filled: bool = False
    burst: bool = False

    def __call__(self, sim: Simulation) -> None:
        spec = sim.bp.scenarios.preemption_storm
        borrower = sim.bp.workload_class(spec.borrower_class)
        claimant = sim.bp.workload_class(spec.claimant_class)
        if not self.filled and sim.t >= spec.fill_at_s:
            self.filled = True
            free = sum(len(n.free_gpus()) for n in sim.nodes.values() if n.pool == borrower.nodepool)
            _submit_long_runs(sim, borrower, spec.borrower, free)
        if not self.burst and sim.t >= spec.burst_at_s:
            self.burst = True
            quota = sim.bp.quota(spec.claimant, claimant.nodepool).gpu
            _submit_long_runs(sim, claimant, spec.claimant, quota)


def _submit_long_runs(sim: Simulation, wclass: WorkloadClass, project: str, count: int) -> None:
    """``count`` one-GPU workloads of ``wclass`` that run for the whole scenario and never fail."""
    for _ in range(count):
        sim.submit(
            sim.arrivals.make(
                wclass, sim.t, project=project, gpus_per_pod=1, run_seconds=LONG_RUN_S, will_fail=False
            )
        )


def install(sim: Simulation, scenario: str) -> Callable[[Simulation], None] | None:
    """Attach ``scenario``'s hook to ``sim``; returns it (None for the baseline)."""
    hooks: dict[str, Callable[[], Callable[[Simulation], None]]] = {
        "quota-exhaustion": QuotaExhaustionHook,
        "preemption-storm": PreemptionStormHook,
        "gpu-fault": GpuFaultHook,
    }
    if scenario == "baseline":
        return None
    hook = hooks[scenario]()
    sim.hooks.append(hook)
    return hook
