"""The emulated cluster stepped by a simulated clock: lifecycle, sessions, allocation, events, logs.

Lifecycle of a workload (Run:ai API phases): Creating -> Pending -> Initializing -> Running ->
Completed | Failed, and Running/Initializing -> evicted -> Pending (pods deleted, new pods created).
GPUs are allocated to specific pods on specific nodes at bind time (Initializing) and freed when the
workload ends or is evicted; :mod:`lab.runai.dcgm_bridge` hands every allocation to the DCGM shim.

One KAI scheduling session per node pool and step (KAI runs one scheduler shard per node pool).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

from lab.dcgm.shim import PodInfo
from lab.runai import schedlog
from lab.runai.arrivals import Arrivals, rand_uuid, suffix
from lab.runai.cluster_state import (
    ACTIVE,
    ALLOCATED,
    CONTAINER,
    Node,
    Phase,
    Pod,
    PodPhase,
    Workload,
    nodes_of,
)
from lab.runai.dcgm_bridge import DcgmBridge, GpuStat
from lab.runai.k8s_events import EventLog
from lab.runai.scheduler import DepartmentSpec, Job, QueueSpec, Session, SessionResult, Snapshot
from lab.runai.shard_metrics import ShardMetrics
from lab.runai.transitions import apply_session, pod_ref, whole_ms
from lab.spec.runai_blueprint import RunaiBlueprint

LINE = Callable[[str], None]


class Simulation:
    def __init__(
        self,
        blueprint: RunaiBlueprint,
        out_dir: Path,
        *,
        seed: int = 0,
        epoch: float = 1772409600.0,  # 2026-03-02T00:00:00Z, the KAI v0.13.0 release day
        event_sink: LINE | None = None,
        log_sink: Callable[[str, str], None] | None = None,
        dcgm_address_for: Callable[[str], str] | None = None,
    ) -> None:
        self.bp = blueprint
        self.out_dir = out_dir
        self.rng = random.Random(seed)
        self.epoch = epoch
        self.t = 0.0
        self.steps = 0
        self.arrivals = Arrivals(blueprint, random.Random(seed + 1))
        self.nodes: dict[str, Node] = nodes_of(blueprint)
        self.workloads: dict[str, Workload] = {}
        self.events = EventLog(clock=self.now, sink=event_sink)
        self.log_sink = log_sink
        self.log_lines: dict[str, int] = {pool.name: 0 for pool in blueprint.node_pools}
        self.shards = {pool.name: ShardMetrics() for pool in blueprint.node_pools}
        self.dcgm = DcgmBridge(
            ((n.name, n.gpus, n.model_name) for n in self.nodes.values()),
            out_dir,
            seed=seed,
            clock=lambda: self.t,
            address_for=dcgm_address_for,
        )
        self.gpu_stats: dict[tuple[str, int], GpuStat] = {}
        self.last_active: dict[tuple[str, int], float] = {}
        self.hooks: list[Callable[[Simulation], None]] = []
        self.deleted_pods = 0
        self.created_pods = 0

    # --- clock --------------------------------------------------------------------------------
    def now(self) -> float:
        """Unix time of the simulated present."""
        return self.epoch + self.t

    # --- public actions (scenarios use these) ------------------------------------------------
    def submit(self, workload: Workload) -> Workload:
        workload.phase_since = self.t
        workload.transitions.append((self.t, workload.phase))
        self.workloads[workload.uid] = workload
        return workload

    def active(self) -> list[Workload]:
        return [w for w in self.workloads.values() if w.phase in ACTIVE]

    def fail_on_xid(self, workload: Workload, node: str, gpu: int, xid: int) -> None:
        """An XID on ``node``/``gpu`` kills the pod's CUDA context: the container fails, the
        workload goes Failed, the device plugin marks the GPU unhealthy."""
        self.dcgm.inject_xid(node, gpu, xid)
        self.nodes[node].unhealthy.add(gpu)
        for pod in workload.live_pods():
            if pod.node == node and gpu in pod.gpus:
                ref = pod_ref(workload, pod, container=True)
                self.events.record(
                    ref,
                    "Warning",
                    "BackOff",
                    f"Back-off restarting failed container {CONTAINER} in pod "
                    f"{pod.name}_{workload.namespace}({pod.uid})",
                    "kubelet",
                    node,
                )
        self._finish(workload, failed=True, reason="PodFailed")

    # --- stepping -------------------------------------------------------------------------------
    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()

    def step(self) -> None:
        dt = self.bp.clock.step_seconds
        self.t += dt
        self.steps += 1
        self._advance_lifecycle(dt)
        for wclass in self.arrivals.due(dt):
            self.submit(self.arrivals.make(wclass, self.t))
        for hook in self.hooks:
            hook(self)
        for pool in self.bp.node_pools:
            self._session(pool.name)
        self._expire()
        self._sync_dcgm()

    def _advance_lifecycle(self, dt: float) -> None:
        life = self.bp.lifecycle
        for w in self.active():
            since = self.t - w.phase_since
            if w.phase is Phase.CREATING and since >= life.creating_s:
                self.create_pods(w)
                self.set_phase(w, Phase.PENDING)
            elif w.phase is Phase.PENDING:
                w.pending_seconds += dt
            elif w.phase is Phase.INITIALIZING and since >= life.initializing_s:
                for pod in w.live_pods():
                    pod.phase = PodPhase.RUNNING
                self.set_phase(w, Phase.RUNNING)
            elif w.phase is Phase.RUNNING:
                w.running_seconds += dt
                if w.running_seconds >= w.run_seconds_needed:
                    self._finish(w, failed=w.will_fail, reason="PodFailed" if w.will_fail else "")

    def set_phase(self, w: Workload, phase: Phase) -> None:
        w.phase = phase
        w.phase_since = self.t
        w.transitions.append((self.t, phase))

    def create_pods(self, w: Workload) -> None:
        for rank in range(w.pods_count):
            w.pods.append(Pod(f"{w.name}-{suffix(self.rng)}", rand_uuid(self.rng), rank, self.t))
            self.created_pods += 1

    def release(self, w: Workload, pod: Pod) -> None:
        if pod.node is not None:
            node = self.nodes[pod.node]
            for gpu in pod.gpus:
                node.holders.pop(gpu, None)

    def _finish(self, w: Workload, *, failed: bool, reason: str) -> None:
        for pod in w.live_pods():
            self.release(w, pod)
            pod.phase = PodPhase.FAILED if failed else PodPhase.SUCCEEDED
        self.set_phase(w, Phase.FAILED if failed else Phase.COMPLETED)
        w.finished_at = self.t
        w.phase_reason = reason

    def _expire(self) -> None:
        for uid, w in list(self.workloads.items()):
            if w.finished_at is not None and self.t - w.finished_at >= self.bp.lifecycle.retention_s:
                for pod in w.live_pods():
                    pod.deleted_at = self.t
                    self.deleted_pods += 1
                for pod in w.pods:
                    self.events.forget(pod.uid)
                self.events.forget(w.podgroup_uid)
                del self.workloads[uid]

    # --- scheduling ---------------------------------------------------------------------------
    def _job(self, w: Workload) -> Job:
        placement = tuple((p.node, p.gpus) for p in w.live_pods() if p.node is not None and p.gpus)
        return Job(
            w.uid,
            w.namespace,
            w.name,
            w.podgroup,
            w.project,
            w.nodepool,
            w.priority,
            w.preemptible,
            w.pods_count,
            w.gpus_per_pod,
            w.submitted_at,
            placement,
        )

    def snapshot(self, pool: str) -> Snapshot:
        queues = [
            QueueSpec(p.name, p.department, pool, float(q.gpu), float(q.over_quota_weight), float(q.limit))
            for p in self.bp.projects
            for q in [self.bp.quota(p.name, pool)]
        ]
        departments = []
        for d in self.bp.departments:
            dq = d.quotas.get(pool)
            departments.append(
                DepartmentSpec(
                    d.name,
                    pool,
                    float(dq.gpu) if dq else 0.0,
                    float(dq.over_quota_weight) if dq else 0.0,
                    float(dq.limit) if dq else 0.0,
                )
            )
        nodes = {n.name: (pool, tuple(n.free_gpus())) for n in self.nodes.values() if n.pool == pool}
        pending = [
            self._job(w) for w in self.workloads.values() if w.nodepool == pool and w.phase is Phase.PENDING
        ]
        running = [
            self._job(w) for w in self.workloads.values() if w.nodepool == pool and w.phase in ALLOCATED
        ]
        return Snapshot(queues, departments, nodes, pending, running)

    def _session(self, pool: str) -> None:
        metrics = self.shards[pool]
        started = time.perf_counter()
        session = Session(self.snapshot(pool))
        opened = time.perf_counter()
        metrics.open_ms = whole_ms(opened - started)
        for name, run_action in (
            ("allocate", session.allocate),
            ("reclaim", session.reclaim),
            ("preempt", session.preempt),
        ):
            begin = time.perf_counter()
            run_action()
            metrics.action_ms[name] = whole_ms(time.perf_counter() - begin)
        result = session.result
        closing = time.perf_counter()
        apply_session(self, pool, result)
        metrics.close_ms = whole_ms(time.perf_counter() - closing)
        metrics.e2e_ms = whole_ms(time.perf_counter() - started)
        for table, source in (
            (metrics.scheduled, result.scheduled),
            (metrics.acted_on, result.acted_on),
            (metrics.simulated, result.simulated),
        ):
            for action, n in source.items():
                table[action] = table.get(action, 0) + n
        metrics.preemption_attempts += result.preemption_attempts
        metrics.fair_share = {
            project: share for (p, project), share in result.fair_share.items() if p == pool
        }
        self._log(pool, result)

    def _log(self, pool: str, result: SessionResult) -> None:
        if self.log_sink is None:
            return
        session = schedlog.session_id(self.now(), self.rng)
        verbosity = self.bp.log_verbosity
        entries = [
            (1, "INFO", "", "Start scheduling ..."),
            *result.logs,
            (1, "INFO", "", "End scheduling ..."),
        ]
        for level_v, level, action, message in entries:
            if level_v <= verbosity:
                self.log_sink(pool, schedlog.line(self.now(), level, session, action, message))
                self.log_lines[pool] += 1

    # --- DCGM ---------------------------------------------------------------------------------
    def pod_map(self) -> dict[str, dict[int, PodInfo]]:
        mapping: dict[str, dict[int, PodInfo]] = {}
        for w in self.workloads.values():
            if w.phase not in ALLOCATED:
                continue
            for pod in w.live_pods():
                if pod.node is None:
                    continue
                for gpu in pod.gpus:
                    mapping.setdefault(pod.node, {})[gpu] = PodInfo(
                        pod.name, w.namespace, CONTAINER, w.dcgm_class
                    )
        return mapping

    def _sync_dcgm(self) -> None:
        self.dcgm.write(self.pod_map())
        self.gpu_stats = self.dcgm.gpu_stats()
        for key, stat in self.gpu_stats.items():
            if stat.util_pct > 0:
                self.last_active[key] = self.now()
