"""One KAI scheduling session over a snapshot: allocate, reclaim, preempt (pure, deterministic).

Semantics follow KAI v0.13.0 (``pkg/scheduler/actions/{allocate,reclaim,preempt}``, proportion plugin):

- one queue per project per node pool, under its department (parent queue); fair share per
  :mod:`lab.runai.fairshare`, departments first, then projects within their department's share;
- allocate: queues below their deserved quota first, then the lowest allocated/fair-share ratio;
  jobs by priority, then age; a job over its queue's limit is ``OverLimit``, a non-preemptible job that
  would take its queue's non-preemptible allocation over quota is ``NonPreemptibleOverQuota``
  (capacity_policy), a preemptible job may use free GPUs up to its queue's fair share;
- gang: every pod of a workload is placed in the same session or none is (``minMember`` = pods);
- reclaim: a job whose queue stays within its fair share evicts preemptible jobs of other queues
  that are over their fair share (most over first, lowest priority, newest first);
- preempt: a job evicts preemptible, lower-priority jobs of its own queue in the same pool;
- placement bin-packs: the node with the fewest free GPUs that fits, lowest GPU indices first.

Consolidation and stale-gang eviction are not emulated (no fractional GPUs, no partial gangs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from lab.runai.fairshare import UNLIMITED, QueueShare, divide
from lab.runai.session_types import (
    DepartmentSpec,
    Eviction,
    Job,
    QueueSpec,
    SessionResult,
    Snapshot,
    Unschedulable,
)

__all__ = [
    "DepartmentSpec",
    "Eviction",
    "Job",
    "QueueSpec",
    "Session",
    "SessionResult",
    "Snapshot",
    "Unschedulable",
    "run_session",
]

DEFAULT_POD_ERROR = "Unable to schedule pod"  # common_info/errors.go DefaultPodError
RESOURCES_NOT_FOUND = "no nodes with enough resources were found"  # ResourcesWereNotFoundMsg
NOT_ENOUGH_GPUS = "node(s) didn't have enough resources: GPUs"
ALLOCATE, RECLAIM, PREEMPT = "allocate", "reclaim", "preempt"


class Session:
    """Mutable working copy of one session; ``run`` executes the actions in KAI's order."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.free = {node: list(gpus) for node, (_, gpus) in snapshot.nodes.items()}
        self.node_pool = {node: pool for node, (pool, _) in snapshot.nodes.items()}
        self.queues = {(q.pool, q.project): q for q in snapshot.queues}
        self.allocated: dict[tuple[str, str], float] = {key: 0.0 for key in self.queues}
        self.allocated_np: dict[tuple[str, str], float] = {key: 0.0 for key in self.queues}
        self.running = {job.uid: job for job in snapshot.running}
        for job in snapshot.running:
            self._account(job, +1)
        self.pending = sorted(snapshot.pending, key=lambda j: (-j.priority, j.submitted_at, j.uid))
        self.result = SessionResult()
        self.result.fair_share = self._fair_shares()

    # --- bookkeeping -------------------------------------------------------------------------
    def _account(self, job: Job, sign: int) -> None:
        key = (job.pool, job.project)
        self.allocated[key] = self.allocated.get(key, 0.0) + sign * job.gpus
        if not job.preemptible:
            self.allocated_np[key] = self.allocated_np.get(key, 0.0) + sign * job.gpus

    def _fair_shares(self) -> dict[tuple[str, str], float]:
        requested = dict(self.allocated)
        for job in self.pending:
            requested[(job.pool, job.project)] = requested.get((job.pool, job.project), 0.0) + job.gpus
        out: dict[tuple[str, str], float] = {}
        for pool in sorted({q.pool for q in self.snapshot.queues}):
            total = float(sum(len(g) for n, (p, g) in self.snapshot.nodes.items() if p == pool))
            total += sum(self.allocated[(pool, q.project)] for q in self.snapshot.queues if q.pool == pool)
            depts = [d for d in self.snapshot.departments if d.pool == pool]
            children = {
                d.name: [q for q in self.snapshot.queues if q.pool == pool and q.department == d.name]
                for d in depts
            }
            dept_share = divide(
                total,
                [
                    QueueShare(
                        d.name,
                        d.quota,
                        d.over_quota_weight,
                        d.limit,
                        sum(requested.get((pool, q.project), 0.0) for q in children[d.name]),
                    )
                    for d in depts
                ],
            )
            for dept in depts:
                shares = divide(
                    dept_share[dept.name],
                    [
                        QueueShare(
                            q.project,
                            q.quota,
                            q.over_quota_weight,
                            q.limit,
                            requested.get((pool, q.project), 0.0),
                        )
                        for q in children[dept.name]
                    ],
                )
                for project, share in shares.items():
                    out[(pool, project)] = share
        return out

    def _share(self, job: Job) -> float:
        return self.result.fair_share.get((job.pool, job.project), 0.0)

    # --- placement ----------------------------------------------------------------------------
    def _place(self, job: Job, free: dict[str, list[int]]) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
        """Bin-pack every pod of ``job`` (gang) onto ``free``; None when any pod does not fit."""
        trial = {node: list(gpus) for node, gpus in free.items() if self.node_pool[node] == job.pool}
        placement: list[tuple[str, tuple[int, ...]]] = []
        for _ in range(job.pods):
            fits = [n for n, gpus in trial.items() if len(gpus) >= job.gpus_per_pod]
            if not fits:
                return None
            node = min(fits, key=lambda n: (len(trial[n]), n))
            taken = tuple(sorted(trial[node])[: job.gpus_per_pod])
            trial[node] = [g for g in trial[node] if g not in taken]
            placement.append((node, taken))
        return tuple(placement)

    def _commit(self, job: Job, placement: tuple[tuple[str, tuple[int, ...]], ...]) -> None:
        for node, gpus in placement:
            self.free[node] = [g for g in self.free[node] if g not in gpus]
        self.result.binds[job.uid] = placement
        placed = replace(job, placement=placement)
        self.running[job.uid] = placed
        self._account(placed, +1)

    def _nodes_short(self, job: Job) -> int:
        return sum(
            1
            for n, gpus in self.free.items()
            if self.node_pool[n] == job.pool and len(gpus) < job.gpus_per_pod
        )

    # --- capacity policy (proportion plugin) ----------------------------------------------------
    def _capacity(self, job: Job) -> Unschedulable | None:
        queue = self.queues[(job.pool, job.project)]
        key = (job.pool, job.project)
        if queue.limit != UNLIMITED and self.allocated[key] + job.gpus > queue.limit:
            return Unschedulable(
                "OverLimit",
                f"{queue.project} quota has reached the allowable limit of GPUs. "
                f"Limit is {_num(queue.limit)} GPUs, currently {_num(self.allocated[key])} GPUs allocated "
                f"and workload requested {_num(job.gpus)} GPUs",
            )
        if not job.preemptible and self.allocated_np[key] + job.gpus > queue.quota:
            return Unschedulable(
                "NonPreemptibleOverQuota",
                f"Non-preemptible workload is over quota. Workload requested {_num(job.gpus)} GPUs, but "
                f"{queue.project} quota is {_num(queue.quota)} GPUs, "
                f"while {_num(self.allocated_np[key])} GPUs are already allocated for non-preemptible pods. "
                "Use a preemptible workload to go over quota.",
            )
        return None

    def _within_fair_share(self, job: Job) -> bool:
        return self.allocated[(job.pool, job.project)] + job.gpus <= self._share(job) + 1e-9

    # --- actions ------------------------------------------------------------------------------
    def run(self) -> SessionResult:
        self.allocate()
        self.reclaim()
        self.preempt()
        return self.result

    def _queue_order(self, jobs: Iterable[Job]) -> list[Job]:
        """KAI JobsOrderByQueues: below-deserved queues first, then lowest allocated/fair-share."""

        def key(job: Job) -> tuple[bool, float, int, float, str]:
            q = (job.pool, job.project)
            share = max(self.result.fair_share.get(q, 0.0), 1e-9)
            below_deserved = self.allocated[q] < self.queues[q].quota
            return (not below_deserved, self.allocated[q] / share, -job.priority, job.submitted_at, job.uid)

        return sorted(jobs, key=key)

    def allocate(self) -> None:
        self._log(2, ALLOCATE, "Enter Allocate ...")
        self._log(
            2,
            ALLOCATE,
            f"There are <{len(self.pending)}> PodGroupInfos and "
            f"<{len(self.queues)}> Queues in total for scheduling",
        )
        waiting = list(self.pending)
        still: list[Job] = []
        while waiting:
            job = self._queue_order(waiting)[0]
            waiting.remove(job)
            verdict = self._capacity(job)
            placement = None
            if verdict is None and (
                not job.preemptible
                or self._within_fair_share(job)
                or self.allocated[(job.pool, job.project)] + job.gpus
                <= self.queues[(job.pool, job.project)].quota
            ):
                placement = self._place(job, self.free)
            if placement is not None:
                self._commit(job, placement)
                self.result.count(self.result.scheduled, ALLOCATE)
                self._log(
                    3, ALLOCATE, f"Succesfully allocated resources for job: <{job.namespace}/{job.podgroup}>"
                )
                continue
            if verdict is None:
                short = self._nodes_short(job)
                verdict = Unschedulable(
                    "", f"{RESOURCES_NOT_FOUND}: {short} {NOT_ENOUGH_GPUS}." if short else DEFAULT_POD_ERROR
                )
            self.result.unschedulable[job.uid] = verdict
            self._log(
                3,
                ALLOCATE,
                f"Could not allocate resources for job: <{job.namespace}/{job.podgroup}> "
                f"of queue <{job.project}>",
            )
            still.append(job)
        self.pending = still
        self._log(2, ALLOCATE, "Leaving Allocate ...")

    def _solve(self, job: Job, victims: list[Job], action: str) -> list[Job] | None:
        """Smallest prefix of ``victims`` whose eviction lets ``job`` fit (KAI's job solver, greedy)."""
        free = {node: list(gpus) for node, gpus in self.free.items()}
        chosen: list[Job] = []
        for victim in victims:
            chosen.append(victim)
            for node, gpus in victim.placement:
                free[node] = sorted(set(free[node]) | set(gpus))
            self.result.count(self.result.simulated, action)
            placement = self._place(job, free)
            if placement is not None:
                return chosen
        return None

    def _evict(self, job: Job, victims: list[Job], action: str) -> None:
        # Victims release their GPUs this session, so they are not free to this session's allocate:
        # the preemptor is bound in the next session's (KAI pipelines it onto the releasing GPUs).
        for victim in victims:
            self.result.evictions.append(Eviction(victim, action, job))
            self.running.pop(victim.uid, None)
            self._account(victim, -1)

    def _log(self, verbosity: int, action: str, message: str) -> None:
        self.result.logs.append((verbosity, "INFO", action, message))

    def reclaim(self) -> None:
        self._log(2, RECLAIM, "Enter Reclaim ...")
        for job in self._queue_order(self.pending):
            if job.uid not in self.result.unschedulable or self.result.unschedulable[job.uid].reason:
                continue
            if not self._within_fair_share(job):
                continue
            self.result.count(self.result.acted_on, RECLAIM)
            over = {q: self.allocated[q] - self.result.fair_share.get(q, 0.0) for q in self.allocated}
            victims = sorted(
                (
                    v
                    for v in self.running.values()
                    if v.preemptible
                    and v.pool == job.pool
                    and v.project != job.project
                    and over.get((v.pool, v.project), 0.0) > 1e-9
                ),
                key=lambda v: (-over[(v.pool, v.project)], v.priority, -v.submitted_at, v.uid),
            )
            chosen = self._solve(job, victims, RECLAIM)
            if chosen is None:
                self._log(
                    3, RECLAIM, f"Didn't find a reclaim strategy for job <{job.namespace}/{job.podgroup}>"
                )
                continue
            self._evict(job, chosen, RECLAIM)
            self.result.count(self.result.scheduled, RECLAIM)
            names = " ".join(f"{v.namespace}/{v.name}" for v in chosen)
            self._log(
                3,
                RECLAIM,
                f"Reclaimed resources for job <{job.namespace}/{job.podgroup}>, "
                f"evicting reclaimee tasks: <[{names}]>.",
            )
        self._log(2, RECLAIM, "Leaving Reclaim ...")

    def preempt(self) -> None:
        self._log(2, PREEMPT, "Enter Preempt ...")
        evicted = {e.victim.uid for e in self.result.evictions}
        for job in sorted(self.pending, key=lambda j: (-j.priority, j.submitted_at, j.uid)):
            if job.uid not in self.result.unschedulable or job.uid in {
                e.preemptor.uid for e in self.result.evictions
            }:
                continue
            self.result.count(self.result.acted_on, PREEMPT)
            if not job.preemptible and self._capacity(job) is not None:
                self._log(
                    3,
                    PREEMPT,
                    f"Job <{job.namespace}/{job.podgroup}> would have placed the queue resources over quota",
                )
                continue
            victims = sorted(
                (
                    v
                    for v in self.running.values()
                    if v.preemptible
                    and v.priority < job.priority
                    and v.pool == job.pool
                    and v.project == job.project
                    and v.uid not in evicted
                    and v.placement
                ),
                key=lambda v: (v.priority, -v.submitted_at, v.uid),
            )
            chosen = self._solve(job, victims, PREEMPT) if victims else None
            if chosen is None:
                self._log(
                    3, PREEMPT, f"Didn't find a preemption strategy for job <{job.namespace}/{job.podgroup}>"
                )
                continue
            self._evict(job, chosen, PREEMPT)
            evicted |= {v.uid for v in chosen}
            self.result.preemption_attempts += 1
            self.result.count(self.result.scheduled, PREEMPT)
            names = " ".join(f"{v.namespace}/{v.name}" for v in chosen)
            self._log(
                3,
                PREEMPT,
                f"Successfully preempted for job <{job.namespace}/{job.podgroup}>, "
                f"preempted tasks: <[{names}]>",
            )
        self._log(2, PREEMPT, "Leaving Preempt ...")


def _num(value: float) -> str:
    """humanize.FtoaWithDigits(v, 3) for the whole numbers this emulator produces."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def run_session(snapshot: Snapshot) -> SessionResult:
    return Session(snapshot).run()
