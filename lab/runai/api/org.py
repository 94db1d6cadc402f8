"""The cluster, its node pools and nodes, projects and departments as the Run:ai 2.20 API shows them
(schemas ``DisplayedCluster``, ``Nodepool``, ``Node``, ``Project``, ``Department``), from the blueprint
and the driver's look at the cluster (pure); ``filterBy``, ``sortBy`` and paging of their lists.

Ids are names, as everywhere in the lab's answers (a workload's ``projectId`` and ``departmentId``, the
``nodepoolId`` filter and ``NodepoolId`` group of telemetry): Run:ai numbers them, the lab has no
control plane to do so (cantfind.md, Run:ai item 5). The driver creates the nodes, namespaces and
queues these stand for when it starts, and never changes them, so ``createdAt`` and ``updatedAt`` are
that start. Fields no source fills are left out where optional.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.blueprint.runai_blueprint import Department, NodePool, PoolQuota, Project, RunaiBlueprint
from lab.runai.api import auth
from lab.runai.api.objects import TENANT_ID, compare, order
from lab.runai.api.params import Filter, iso
from lab.runai.cluster_state import ClusterState, Node, namespace_of
from lab.versions import KUBERNETES_VERSION

Obj = dict[str, Any]
# The node label that puts a node in a pool: lab/kube/manifests.py NODE_POOL_LABEL, KAI's
# DefaultNodePoolLabelKey (lab.kube builds on this package, so the name is repeated, and a test holds
# the two equal).
NODE_POOL_LABEL_KEY = "kai.scheduler/node-pool"
# Run:ai names the node pool every cluster starts with "default" (cantfind.md: which pool a real
# cluster marks isDefault).
DEFAULT_NODE_POOL = "default"
# Who created the objects: the lab's one application, whose driver makes them at its start.
CREATED_BY = auth.CLIENT_ID
DATES = ("createdAt", "updatedAt")


def _stamps(created_at: float) -> Obj:
    at = iso(created_at)
    return {"createdAt": at, "updatedAt": at, "createdBy": CREATED_BY, "updatedBy": CREATED_BY}


def cluster(state: ClusterState, created_at: float) -> Obj:
    """``DisplayedCluster``: the blueprint's cluster, connected while the driver looks at it."""
    bp = state.bp
    return {
        "uuid": bp.cluster_id,
        "tenantId": TENANT_ID,
        "name": bp.name,
        "createdAt": iso(created_at),
        # ClusterDisplayedStatus: the API answers only from a look at the cluster (503 before the first).
        "status": {
            "state": "Connected",
            "platform": {"type": "vanilla", "kubeVersion": KUBERNETES_VERSION},
        },
        "lastLiveness": iso(state.now()),
    }


def nodepool(state: ClusterState, pool: NodePool, created_at: float) -> Obj:
    """``Nodepool``: a blueprint pool, its nodes labelled ``kai.scheduler/node-pool=<pool>``."""
    bp = state.bp
    has_nodes = any(n.pool == pool.name for n in state.nodes.values())
    return {
        "name": pool.name,
        "labelKey": NODE_POOL_LABEL_KEY,
        "labelValue": pool.name,
        "clusterId": bp.cluster_id,
        "phase": "Ready" if has_nodes else "Empty",  # NodepoolPhase; every kwok node is Ready
        "id": pool.name,
        "tenantId": TENANT_ID,
        "clusterName": bp.name,
        **_stamps(created_at),
        "isDefault": pool.name == DEFAULT_NODE_POOL,
    }


def node(state: ClusterState, n: Node, created_at: float) -> Obj:
    """``Node``: a kwok node; ``gpuInfo.gpuType`` is its ``nvidia.com/gpu.product`` label (the schema's
    example ``Tesla-V100`` is that label's form)."""
    return {
        "status": "Ready",  # every kwok node is Ready (runai_gpu_count_per_node ready="true")
        "nodePool": n.pool,
        "createdAt": iso(created_at),
        "gpuInfo": {"gpuType": n.model_name.replace(" ", "-"), "gpuCount": n.gpus},
        "name": n.name,
        "clusterUuid": state.bp.cluster_id,
        "updatedAt": iso(created_at),
    }


def _resources(bp: RunaiBlueprint, quotas: Mapping[str, PoolQuota]) -> list[Obj]:
    """``Resources`` per node pool: the KAI Queue's GPU quota, limit (-1 unlimited) and weight."""
    return [
        {
            "nodePool": {"id": pool.name, "name": pool.name},
            "gpu": {
                "deserved": float(q.gpu),
                "limit": float(q.limit),
                "overQuotaWeight": float(q.over_quota_weight),
            },
        }
        for pool in bp.node_pools
        if (q := quotas.get(pool.name)) is not None
    ]


def _total(quotas: Mapping[str, PoolQuota]) -> float:
    return float(sum(q.gpu for q in quotas.values()))


def project(bp: RunaiBlueprint, p: Project, created_at: float) -> Obj:
    """``Project``: the blueprint's project, its quotas per pool, its default node-pool order."""
    pools = bp.node_pool_priority(p.name)
    return {
        "description": "",  # the blueprint describes none
        "defaultNodePools": pools,
        "resources": _resources(bp, p.quotas),
        "name": p.name,
        "clusterId": bp.cluster_id,
        "id": p.name,
        "parentId": p.department,
        "status": {"namespace": namespace_of(p.name)},
        "totalResources": {"gpuQuota": _total(p.quotas)},
        **_stamps(created_at),
        "effective": {"defaultNodePools": pools},
    }


def department(bp: RunaiBlueprint, d: Department, created_at: float) -> Obj:
    """``Department`` (and ``DepartmentForList``): the blueprint's department and its quotas per pool."""
    return {
        "description": "",
        "resources": _resources(bp, d.quotas),
        "name": d.name,
        "clusterId": bp.cluster_id,
        "id": d.name,
        **_stamps(created_at),
        "totalResources": {"gpuQuota": _total(d.quotas)},
    }


@dataclass(frozen=True)
class Entry:
    """One object of a list and the values its ``filterBy`` and ``sortBy`` fields read (dates as unix
    seconds)."""

    body: Obj
    fields: Mapping[str, str | float]


def nodepools(state: ClusterState, created_at: float) -> list[Entry]:
    entries = []
    for pool in state.bp.node_pools:
        body = nodepool(state, pool, created_at)
        fields = {"name": pool.name, "clusterId": state.bp.cluster_id, "phase": body["phase"]}
        entries.append(Entry(body, fields | {"createdAt": created_at, "updatedAt": created_at}))
    return entries


def projects(bp: RunaiBlueprint, created_at: float) -> list[Entry]:
    return [
        Entry(
            project(bp, p, created_at),
            {
                "name": p.name,
                "clusterId": bp.cluster_id,
                "departmentId": p.department,
                "parentId": p.department,
                "parentName": p.department,
                "totalGpuQuota": _total(p.quotas),
                "createdAt": created_at,
            },
        )
        for p in bp.projects
    ]


def departments(bp: RunaiBlueprint, created_at: float) -> list[Entry]:
    return [
        Entry(
            department(bp, d, created_at),
            {
                "name": d.name,
                "clusterId": bp.cluster_id,
                "totalGpuQuota": _total(d.quotas),
                "createdAt": created_at,
            },
        )
        for d in bp.departments
    ]


def select(
    entries: Sequence[Entry],
    terms: Sequence[Filter],
    sort_by: str | None,
    descending: bool,
    offset: int,
    limit: int,
) -> tuple[list[Obj], int | None]:
    """The page of objects that pass every term, sorted by ``sort_by`` (else in blueprint order), and
    the ``next`` offset while more remain."""
    chosen = [e for e in entries if all(compare(e.fields[t.field], t, DATES) for t in terms)]
    if sort_by is not None:
        chosen.sort(key=lambda e: order(e.fields[sort_by]), reverse=descending)
    page = [e.body for e in chosen[offset : offset + limit]]
    return page, (offset + limit if offset + limit < len(chosen) else None)
