"""Run:ai blueprint: node pools, departments, projects with per-pool quotas, a workload mix, scenarios.

Loading validates everything up front; any mistake becomes a :class:`RunaiBlueprintError` that names
the file, the field and the fix (house style of :mod:`lab.blueprint.slurm_blueprint`). Names of
departments, projects and users are pseudonyms from the blueprint only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from lab import contract
from lab.blueprint import strict
from lab.blueprint.egress_spec import RunaiEgress
from lab.blueprint.strict import Strict
from lab.paths import BLUEPRINTS_DIR

DEFAULT_RUNAI_BLUEPRINT = BLUEPRINTS_DIR / "runai.yaml"

# Kubernetes DNS-1123 label (namespace runai-<project> must stay one).
K8S_NAME = r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$"
Name = Annotated[str, Field(pattern=K8S_NAME)]
UNLIMITED = -1

# KAI docs/priority/README.md (v0.13.0): the priority classes KAI installs; >= 100 is non-preemptible.
PRIORITY_CLASSES: dict[str, int] = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
NON_PREEMPTIBLE_FROM = 100
SCENARIOS = ("baseline", "quota-exhaustion", "preemption-storm", "gpu-fault")


class RunaiBlueprintError(ValueError):
    """A Run:ai blueprint that cannot be used; the message names file, field and fix."""


class NodePool(Strict):
    name: Name
    node_prefix: Name
    nodes: int = Field(ge=1, le=512)  # KAI's own scale test runs 500 kwok nodes (512 with topology)
    gpus_per_node: int = Field(ge=1, le=16)
    cpu_cores_per_node: int = Field(ge=1, le=1024)
    memory_bytes_per_node: int = Field(ge=1 << 30)
    model_name: str = "NVIDIA H100 80GB HBM3"

    def node_names(self) -> list[str]:
        return [f"{self.node_prefix}-{i:03d}" for i in range(1, self.nodes + 1)]


class PoolQuota(Strict):
    """One queue's resources in one node pool (KAI Queue ``spec.resources.gpu``)."""

    gpu: int = Field(ge=0)
    over_quota_weight: int = Field(default=1, ge=0)
    limit: int = Field(default=UNLIMITED, ge=UNLIMITED)

    @model_validator(mode="after")
    def _limit_covers_quota(self) -> PoolQuota:
        if self.limit != UNLIMITED and self.limit < self.gpu:
            raise ValueError(
                f"limit {self.limit} is below the quota {self.gpu}; use -1 (unlimited) or >= gpu"
            )
        return self


class Department(Strict):
    name: Name
    quotas: dict[str, PoolQuota]


class Project(Strict):
    name: Name
    department: Name
    users: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9._-]{0,30}$")]] = Field(min_length=1)
    quotas: dict[str, PoolQuota]
    # The project's default node-pool priority list (Run:ai: "Projects" → node pools; the API's
    # Project.defaultNodePools): where a workload that names no node pool goes, first pool first.
    # Unset: every pool the project holds a queue in, in node_pools order (lab default).
    default_node_pools: list[Name] | None = Field(default=None, min_length=1)


class Runtime(Strict):
    """Log-normal run time from a trace's median and mean (seconds)."""

    median_s: float = Field(gt=0)
    mean_s: float = Field(gt=0)

    @model_validator(mode="after")
    def _mean_not_below_median(self) -> Runtime:
        if self.mean_s < self.median_s:
            raise ValueError("mean_s must be >= median_s (a log-normal's mean is never below its median)")
        return self


class WorkloadClass(Strict):
    name: Name
    # Run:ai docs 2.18 metrics page: job_type/workload_type values.
    workload_type: Literal["training", "interactive", "inference"]
    # lab.dcgm.workloads profiles the shim knows (drives GPU utilisation only, never a label).
    dcgm_class: Literal["training", "interactive", "inference"]
    priority_class: str
    rate_per_hour: float = Field(ge=0)
    projects: list[Name] = Field(min_length=1)
    # The node pool its workloads name; none: they name none, as a user's kubectl job often does, and
    # go by their project's node-pool priority list (lab/kube/nodepools.py).
    nodepool: Name | None = None
    pods: int = Field(default=1, ge=1, le=64)
    gpus_per_pod: dict[int, float] = Field(min_length=1)
    runtime: Runtime
    failure_fraction: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _checks(self) -> WorkloadClass:
        if self.priority_class not in PRIORITY_CLASSES:
            raise ValueError(
                f"priority_class {self.priority_class!r} is not a KAI priority class; "
                f"use one of {', '.join(PRIORITY_CLASSES)}"
            )
        total = sum(self.gpus_per_pod.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"gpus_per_pod shares must add up to 1, got {total:g}")
        return self


class ResourcesPerGpu(Strict):
    cpu_cores: float = Field(gt=0)
    memory_bytes: int = Field(gt=0)


class QuotaExhaustion(Strict):
    project: Name
    workload_class: Name
    start_s: float = Field(ge=0)
    rate_per_hour: float = Field(gt=0)


class PreemptionStorm(Strict):
    borrower: Name
    borrower_class: Name
    claimant: Name
    claimant_class: Name
    fill_at_s: float = Field(ge=0)
    burst_at_s: float = Field(ge=0)


class GpuFault(Strict):
    at_s: float = Field(ge=0)
    xid: int = Field(ge=1, le=200)
    workload_class: Name


class Scenarios(Strict):
    quota_exhaustion: QuotaExhaustion
    preemption_storm: PreemptionStorm
    gpu_fault: GpuFault


Port = Annotated[int, Field(ge=1024, le=65535)]


class RunaiPorts(Strict):
    """Host ports, every one published on 127.0.0.1 only: the defaults sit beside a Slurm lab's, and a
    second Run:ai lab on the same host names its own."""

    runai: Port = contract.RUNAI_HOST_PORTS["runai"]
    prometheus: Port = contract.RUNAI_HOST_PORTS["prometheus"]
    alertmanager: Port = contract.RUNAI_HOST_PORTS["alertmanager"]
    kube_apiserver: Port = contract.RUNAI_HOST_PORTS["kube-apiserver"]
    runai_rest: Port = contract.RUNAI_HOST_PORTS["runai-rest"]
    central_metrics: Port = contract.RUNAI_HOST_PORTS["central-metrics"]  # the centre (egress on)
    central_logs: Port = contract.RUNAI_HOST_PORTS["central-logs"]
    central_alerts: Port = contract.RUNAI_HOST_PORTS["central-alerts"]

    @model_validator(mode="after")
    def _distinct(self) -> RunaiPorts:
        values = list(self.model_dump().values())
        if len(set(values)) != len(values):
            raise ValueError(f"two host ports are the same ({values}); give each its own")
        return self


class RunaiBlueprint(Strict):
    kind: Literal["runai"]  # lab/kinds: how `lab up` knows this is a Run:ai lab
    name: Name
    description: str = ""
    cluster_id: Annotated[
        str, Field(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
    ]
    scheduler_name: Literal["kai-scheduler", "runai-scheduler"] = "kai-scheduler"
    log_verbosity: int = Field(default=3, ge=0, le=7)
    node_pools: list[NodePool] = Field(min_length=1)
    departments: list[Department] = Field(min_length=1)
    projects: list[Project] = Field(min_length=1)
    workloads: list[WorkloadClass] = Field(min_length=1)
    resources_per_gpu: ResourcesPerGpu
    scenarios: Scenarios
    ports: RunaiPorts = RunaiPorts()
    # Prometheus scrapes one DCGM target per node (dcgm-exporter runs on every GPU node). A scale
    # lab on a small host may leave them out: the driver still serves them, nothing scrapes them.
    scrape_dcgm: bool = True
    egress: RunaiEgress = RunaiEgress()  # what crosses the site's fence (lab/egress)

    @model_validator(mode="after")
    def _references_resolve(self) -> RunaiBlueprint:
        pools = [p.name for p in self.node_pools]
        strict.require_unique("node pool", pools)
        strict.require_unique("node prefix", [p.node_prefix for p in self.node_pools])
        departments = [d.name for d in self.departments]
        strict.require_unique("department", departments)
        projects = [p.name for p in self.projects]
        strict.require_unique("project", projects)
        strict.require_unique("workload class", [w.name for w in self.workloads])
        for owner, quotas in [(f"departments.{d.name}", d.quotas) for d in self.departments] + [
            (f"projects.{p.name}", p.quotas) for p in self.projects
        ]:
            unknown = sorted(set(quotas) - set(pools))
            if unknown:
                raise ValueError(f"{owner}.quotas names node pools {unknown} not in node_pools {pools}")
        for project in self.projects:
            listed = project.default_node_pools or []
            strict.require_unique(f"projects.{project.name}.default_node_pools", listed)
            no_queue = [p for p in listed if p not in project.quotas]
            if no_queue:
                raise ValueError(
                    f"projects.{project.name}.default_node_pools names {no_queue}, where the project has "
                    f"no queue; list only pools of its quotas ({sorted(project.quotas)})"
                )
            if project.department not in departments:
                raise ValueError(
                    f"project {project.name!r} has department {project.department!r}, not in {departments}"
                )
        classes = {w.name for w in self.workloads}
        for workload in self.workloads:
            if workload.nodepool is not None and workload.nodepool not in pools:
                raise ValueError(
                    f"workload class {workload.name!r}: nodepool {workload.nodepool!r} not in {pools}"
                )
            unknown = sorted(set(workload.projects) - set(projects))
            if unknown:
                raise ValueError(f"workload class {workload.name!r} names unknown projects {unknown}")
            for pool in self.pools_of(workload):
                too_big = [g for g in workload.gpus_per_pod if g > pool.gpus_per_node or g < 1]
                if too_big:
                    raise ValueError(
                        f"workload class {workload.name!r}: gpus_per_pod {too_big} do not fit a node of "
                        f"pool {pool.name!r} ({pool.gpus_per_node} GPUs)"
                    )
        s = self.scenarios
        checks = [
            ("scenarios.quota_exhaustion.project", s.quota_exhaustion.project, projects),
            ("scenarios.preemption_storm.borrower", s.preemption_storm.borrower, projects),
            ("scenarios.preemption_storm.claimant", s.preemption_storm.claimant, projects),
            ("scenarios.quota_exhaustion.workload_class", s.quota_exhaustion.workload_class, classes),
            ("scenarios.preemption_storm.borrower_class", s.preemption_storm.borrower_class, classes),
            ("scenarios.preemption_storm.claimant_class", s.preemption_storm.claimant_class, classes),
            ("scenarios.gpu_fault.workload_class", s.gpu_fault.workload_class, classes),
        ]
        for field, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{field} is {value!r}; use one of {sorted(allowed)}")
            # A scenario's scripted work runs, and is looked for, in its class's own pool.
            if allowed is classes and self.workload_class(value).nodepool is None:
                raise ValueError(f"{field} is {value!r}, a class that names no nodepool; give it one")
        return self

    def pool(self, name: str) -> NodePool:
        return next(p for p in self.node_pools if p.name == name)

    def project(self, name: str) -> Project:
        return next(p for p in self.projects if p.name == name)

    def scenario_pool(self, wclass: WorkloadClass) -> str:
        """The pool a scenario's class names (loading refuses a scenario class that names none)."""
        assert wclass.nodepool is not None, f"scenario class {wclass.name} names no nodepool"
        return wclass.nodepool

    def pools_of(self, wclass: WorkloadClass) -> list[NodePool]:
        """The pools a class's workloads may run in: its own, else its projects' priority lists'."""
        if wclass.nodepool is not None:
            return [self.pool(wclass.nodepool)]
        names = {pool for project in wclass.projects for pool in self.node_pool_priority(project)}
        return [p for p in self.node_pools if p.name in names]

    def node_pool_priority(self, project: str) -> list[str]:
        """Where a workload of ``project`` that names no node pool may go, first choice first."""
        listed = self.project(project).default_node_pools
        if listed is not None:
            return list(listed)
        return [p.name for p in self.node_pools if p.name in self.project(project).quotas]

    def workload_class(self, name: str) -> WorkloadClass:
        return next(w for w in self.workloads if w.name == name)

    def quota(self, project: str, pool: str) -> PoolQuota:
        """A project's queue in a pool; a pool the project does not list has no quota and limit 0."""
        return self.project(project).quotas.get(pool, PoolQuota(gpu=0, over_quota_weight=0, limit=0))


def load(path: Path) -> RunaiBlueprint:
    """Read and validate ``path``; every failure is a :class:`RunaiBlueprintError` naming the fix."""
    data = strict.read_mapping(path, "Run:ai blueprint", "name, node_pools, projects", RunaiBlueprintError)
    return parse(data, source=str(path))


def parse(data: dict[str, Any], source: str = "<runai blueprint>") -> RunaiBlueprint:
    return strict.validate(
        RunaiBlueprint, data, source, "Run:ai blueprint", "blueprints/runai.yaml", RunaiBlueprintError
    )
