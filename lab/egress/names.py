"""The names a lab's egress pseudonymises, and the labels that carry them, from its blueprint (pure).

Two sorts of name reach the pseudonymised labels:

- **Fixed names**: what the blueprint declares (users, accounts, reservations' users; projects,
  departments, their KAI queues, namespaces) and the few the lab itself always has (Slurm's ``root``
  and its daemons' users; Kubernetes' own namespaces). Each is listed, and each can be revealed.
- **Names made at run time**: a Run:ai lab's workloads and pods. Their pattern is fixed by the
  blueprint: a workload is ``<class>-NNNNN``, numbered by the driver from 1 across all classes
  (``lab/runai/arrivals.py``); a distributed workload's pods are ``<workload>-master-0`` and
  ``<workload>-worker-<i>`` (Kubeflow's training operator), so both are revealed by trying the numbers
  up to a bound. A single-pod workload's pod is a batch/v1 Job's: ``<workload>-`` and five random
  characters from Kubernetes' job controller, which no bound reaches: such a pod is not revealed; its
  workload is, through ``created_by_name`` of ``kube_pod_info`` beside it.

The label schemes restated here (``runai-<project>``, ``<owner>-<pool>``, the workload and replica
names) are those of ``lab/kube/manifests.py``, ``lab/runai/arrivals.py`` and the training operator;
the unit tests hold them equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from lab.blueprint.runai_blueprint import Department, Project, RunaiBlueprint
from lab.blueprint.slurm_blueprint import Blueprint

# Users the Slurm lab's series carry that no blueprint declares: root and SlurmUser (slurm) send RPCs
# (slurm_user_rpc_stats, signals/slurm.md), and so does the exporter's own user.
SLURM_OWN_USERS = ("root", "slurm", "slurm-exporter")
SLURM_OWN_ACCOUNTS = ("root",)  # Slurm's root account: the fairshare families' top row
# Namespaces of a Run:ai lab that no blueprint declares: Kubernetes' own (kube_namespace_* of
# kube-state-metrics) and the training operator's (lab/kube/training_operator.py).
KUBERNETES_OWN_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system", "kubeflow")
WORKLOAD_LABELS = ("workload_name", "job_name", "created_by_name", "owner_name")
POD_LABELS = ("pod", "pod_name")
DEFAULT_WORKLOADS_UP_TO = 10_000  # workload numbers tried by reveal, unless told otherwise


@dataclass(frozen=True)
class Name:
    """One name, the pseudonymised labels that carry it, and where it comes from."""

    value: str
    labels: tuple[str, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class RunTimeNames:
    """Names the lab makes while it runs, by a pattern the blueprint fixes."""

    pattern: str
    labels: tuple[str, ...]
    source: str
    # The names for workload numbers 1 … up_to; None when the pattern has a random part.
    candidates: Callable[[int], Iterator[str]] | None

    @property
    def revealable(self) -> bool:
        return self.candidates is not None


@dataclass(frozen=True)
class EgressNames:
    """What a lab's egress pseudonymises: its labels, the names it knows and those made at run time."""

    lab: str
    kind: Literal["slurm", "runai"]
    enabled: bool
    labels: tuple[str, ...]
    fixed: tuple[Name, ...]
    run_time: tuple[RunTimeNames, ...]


def namespace_of(project: str) -> str:
    """A project's namespace (lab/kube/manifests.py)."""
    return f"runai-{project}"


def queue_of(owner: str, pool: str) -> str:
    """A department's or project's KAI queue in a node pool (lab/kube/manifests.py)."""
    return f"{owner}-{pool}"


def workload_of(workload_class: str, number: int) -> str:
    """The driver's ``number``-th workload when it is of class ``workload_class`` (lab/runai/arrivals.py)."""
    return f"{workload_class}-{number:05d}"


def replicas_of(workload: str, pods: int) -> list[str]:
    """A PyTorchJob's pods: one master, ``pods - 1`` workers (the training operator's replica names)."""
    return [f"{workload}-master-0"] + [f"{workload}-worker-{index}" for index in range(pods - 1)]


def of_blueprint(blueprint: Blueprint | RunaiBlueprint) -> EgressNames:
    """The names ``blueprint``'s egress pseudonymises, for the labels its ``egress:`` lists."""
    labels = blueprint.egress.pseudonymised_labels
    if isinstance(blueprint, RunaiBlueprint):
        values, run_time = _runai_values(blueprint), _runai_run_time(blueprint, labels)
        kind: Literal["slurm", "runai"] = "runai"
    else:
        values, run_time = _slurm_values(blueprint), ()
        kind = "slurm"
    return EgressNames(
        lab=blueprint.name,
        kind=kind,
        enabled=blueprint.egress.enabled,
        labels=labels,
        fixed=_merge(values, labels),
        run_time=run_time,
    )


# label → (name, source) pairs, before the egress: section picks its labels.
_Values = dict[str, list[tuple[str, str]]]


def _slurm_values(bp: Blueprint) -> _Values:
    users = [(u.name, "blueprint users") for u in bp.all_users]
    users += [(name, "the lab's own Slurm users") for name in SLURM_OWN_USERS]
    accounts = [(a.name, "blueprint accounts") for a in bp.accounts]
    accounts += [(name, "Slurm's root account") for name in SLURM_OWN_ACCOUNTS]
    reservations = [(r.name, "blueprint reservations") for r in bp.reservations]
    nodes = [(name, "blueprint nodes") for name in bp.nodes.names]
    return {
        "user": users,
        "account": accounts,
        # Slurm prints a reservation's users comma-separated; the lab's capture shows `users="root"`.
        "users": [(",".join(r.users), "blueprint reservations' users") for r in bp.reservations],
        "partition": [(p.name, "blueprint partitions") for p in bp.partitions],
        "reservation_name": reservations,
        "reservation": reservations,
        "node": nodes,
        "Hostname": nodes,
    }


def _runai_values(bp: RunaiBlueprint) -> _Values:
    projects = [(p.name, "blueprint projects") for p in bp.projects]
    users = [(user, "blueprint project users") for p in bp.projects for user in p.users]
    namespaces = [(namespace_of(p.name), "blueprint projects' namespaces") for p in bp.projects]
    owners: list[Department | Project] = [*bp.departments, *bp.projects]
    queues = [
        (queue_of(owner.name, pool), "blueprint queues (owner-pool)")
        for owner in owners
        for pool in sorted(owner.quotas)
    ]
    pod_queues = [
        (queue_of(p.name, pool), "blueprint projects' queues") for p in bp.projects for pool in p.quotas
    ]
    pod_queues += [
        (queue_of(project, w.nodepool) if w.nodepool else project, "blueprint projects' queues")
        for w in bp.workloads
        for project in w.projects
    ]
    nodes = [(name, "blueprint nodes") for pool in bp.node_pools for name in pool.node_names()]
    return {
        "project": projects,
        "label_project": projects,
        "label_runai_queue": projects,
        "department": [(d.name, "blueprint departments") for d in bp.departments],
        "queue_name": projects + queues,
        "label_kai_scheduler_queue": pod_queues,
        "user": users,
        "label_user": users,
        "pod_namespace": namespaces,
        "job_namespace": namespaces,
        "namespace": namespaces
        + [(name, "Kubernetes' own namespaces") for name in KUBERNETES_OWN_NAMESPACES],
        "nodepool": [(pool.name, "blueprint node pools") for pool in bp.node_pools],
        "node": nodes,
        "Hostname": nodes,
    }


def in_text(bp: RunaiBlueprint) -> str:
    """One regular expression (RE2, the gateway's) for the names a Run:ai lab's log lines carry in their
    text: pods, workloads and the fixed names of the pseudonymised labels, each matched whole, so that a
    name in a line gets the pseudonym its label gets (``runai-team-a/train-00001-master-0`` → two
    pseudonyms and the slash). Alternatives that begin alike are tried longest first: a pod before its
    workload, a queue ``team-a-default`` before its project. Kubernetes' own namespaces are left out:
    ``default`` is also a node pool's name and no one's."""
    labels = bp.egress.pseudonymised_labels
    patterns: list[str] = []
    if set(labels) & set(POD_LABELS):
        for wclass in bp.workloads:
            name = re.escape(wclass.name)
            patterns += [rf"{name}-\d{{5}}-(?:master|worker)-\d+", rf"{name}-\d{{5}}-[a-z0-9]{{5}}"]
    if set(labels) & set(WORKLOAD_LABELS):
        patterns += [rf"{re.escape(wclass.name)}-\d{{5}}" for wclass in bp.workloads]
    own = set(KUBERNETES_OWN_NAMESPACES)
    fixed = [name.value for name in _merge(_runai_values(bp), labels) if name.value not in own]
    patterns += [re.escape(value) for value in sorted(fixed, key=lambda value: (-len(value), value))]
    return rf"\b(?:{'|'.join(patterns)})\b"


def namespaces_in_text(bp: RunaiBlueprint) -> str:
    """A regular expression (RE2, no escapes: names are DNS labels) that a log line naming an object of a
    project's namespace matches: how the gateway keeps, of KAI's lines, those that name workloads."""
    namespaces = "|".join(namespace_of(p.name) for p in bp.projects)
    return f"(^|[^a-z0-9-])({namespaces})($|[^a-z0-9-])"


def _runai_run_time(bp: RunaiBlueprint, labels: tuple[str, ...]) -> tuple[RunTimeNames, ...]:
    workload_labels = tuple(label for label in labels if label in WORKLOAD_LABELS)
    pod_labels = tuple(label for label in labels if label in POD_LABELS)
    found: list[RunTimeNames] = []
    for wclass in bp.workloads:
        source = f"workloads of class {wclass.name}"
        if workload_labels:
            found.append(
                RunTimeNames(f"{wclass.name}-NNNNN", workload_labels, source, _workloads(wclass.name))
            )
        if pod_labels and wclass.pods > 1:
            workers = "0" if wclass.pods == 2 else f"0 … {wclass.pods - 2}"
            pattern = f"{wclass.name}-NNNNN-master-0, {wclass.name}-NNNNN-worker-{workers}"
            found.append(
                RunTimeNames(pattern, pod_labels, f"pods of {source}", _replicas(wclass.name, wclass.pods))
            )
        elif pod_labels:
            found.append(
                RunTimeNames(
                    f"{wclass.name}-NNNNN-xxxxx (a Job's pod: random suffix)",
                    pod_labels,
                    f"pods of {source}",
                    None,
                )
            )
    return tuple(found)


def _workloads(workload_class: str) -> Callable[[int], Iterator[str]]:
    def candidates(up_to: int) -> Iterator[str]:
        return (workload_of(workload_class, number) for number in range(1, up_to + 1))

    return candidates


def _replicas(workload_class: str, pods: int) -> Callable[[int], Iterator[str]]:
    def candidates(up_to: int) -> Iterator[str]:
        for number in range(1, up_to + 1):
            yield from replicas_of(workload_of(workload_class, number), pods)

    return candidates


def _merge(values: _Values, labels: Iterable[str]) -> tuple[Name, ...]:
    """One :class:`Name` per distinct value of the chosen labels, in first-seen order."""
    carried: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for label in labels:
        for value, source in values.get(label, []):
            if label not in carried.setdefault(value, []):
                carried[value].append(label)
            if source not in sources.setdefault(value, []):
                sources[value].append(source)
    return tuple(Name(value, tuple(carried[value]), tuple(sources[value])) for value in carried)
