"""The paths a script lists before it asks for metrics: the cluster, node pools, nodes, projects and
departments, read by the Run:ai SDK's own models (runapy 1.220.0) and held to the blueprint's values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.kube.manifests import NODE_POOL_LABEL
from lab.kube.manifests import nodes as node_objects
from lab.runai.api import auth, org
from lab.runai.api.routes import RestApi

from ...kube.api_objects import BP, busy
from .test_routes import _error, get, ok

models = pytest.importorskip("runai.models")

CREDS = auth.Credentials(auth.CLIENT_ID, "s3cret", b"k" * auth.SIGNING_KEY_BYTES)
NOW = 1_796_212_187.0
STARTED = 1_796_212_000.0  # the driver's start, before its look at NOW
STARTED_ISO = "2026-12-02T11:46:40.000Z"
CID = BP.cluster_id
# The swagger's Project and Department (required properties, allOf merged). runapy 1.220.0's own
# `Project` and `Department` models, and GetProjects200Response built on the first, carry the
# swagger's Project1 and Department1 (the reports' shape) instead, so they refuse any answer of these
# schemas: projects are read here with the models of their parts, departments with DepartmentForList.
PROJECT_REQUIRED = {
    "id", "name", "parentId", "createdAt", "updatedAt", "totalResources", "effective", "status",
    "description", "resources", "clusterId",
}  # fmt: skip
DEPARTMENT_REQUIRED = {
    "id", "name", "clusterId", "createdAt", "updatedAt", "totalResources", "description", "resources",
}  # fmt: skip


def _project(body: dict[str, Any]) -> Any:
    """A project as runapy's models of its parts read it; each required property present."""
    assert set(body) >= PROJECT_REQUIRED, PROJECT_REQUIRED - set(body)
    models.ProjectStatus.from_dict(body["status"])
    models.TotalResources.from_dict(body["totalResources"])
    models.ProjectEffective.from_dict(body["effective"])
    return models.ProjectCreationRequest.from_dict(body)


def _department(body: dict[str, Any]) -> Any:
    assert set(body) >= DEPARTMENT_REQUIRED, DEPARTMENT_REQUIRED - set(body)
    return models.DepartmentForList.from_dict(body)


@pytest.fixture
def api(tmp_path: Path) -> RestApi:
    rest = RestApi(CREDS, "image", clock=lambda: NOW, started=STARTED)
    rest.observe(busy(tmp_path).look())
    return rest


def test_the_cluster_is_the_blueprints(api: RestApi) -> None:
    listed = ok(api, "/api/v1/clusters")
    assert len(listed) == 1
    cluster = models.DisplayedCluster.from_dict(listed[0])
    assert (cluster.uuid, cluster.name, cluster.tenant_id) == (CID, BP.name, org.TENANT_ID)
    assert listed[0]["createdAt"] == STARTED_ISO and listed[0]["lastLiveness"] == "2026-12-02T11:49:47.000Z"
    assert cluster.status.state == "Connected"
    assert ok(api, f"/api/v1/clusters/{CID}?verbosity=metadata") == listed[0]
    other = "00000000-0000-4000-8000-000000000000"
    assert "not found" in _error(get(api, f"/api/v1/clusters/{other}"), 404)
    assert "verbosity 'all'" in _error(get(api, "/api/v1/clusters?verbosity=all"), 400)


def test_node_pools_are_the_blueprints_pools_and_their_node_label(api: RestApi) -> None:
    body = ok(api, "/api/v1/node-pools")
    models.GetNodepools200Response.from_dict(body)
    pools = [models.Nodepool.from_dict(p) for p in body["nodepools"]]
    assert [(p.id, p.name, p.label_value) for p in pools] == [(p.name, p.name, p.name) for p in BP.node_pools]
    assert {p.label_key for p in pools} == {NODE_POOL_LABEL}
    assert {(p.cluster_id, p.cluster_name, p.tenant_id) for p in pools} == {(CID, BP.name, org.TENANT_ID)}
    assert [p.is_default for p in pools] == [True, False]  # "default", "inference"
    assert {p["createdAt"] for p in body["nodepools"]} == {STARTED_ISO}
    one = ok(api, "/api/v1/node-pools/inference")
    assert one == body["nodepools"][1] and models.Nodepool.from_dict(one).phase == "Ready"
    assert "node pool nowhere not found" in _error(get(api, "/api/v1/node-pools/nowhere"), 404)


def test_node_pools_filter_sort_and_page(api: RestApi) -> None:
    names = lambda target: [p["name"] for p in ok(api, target)["nodepools"]]  # noqa: E731
    assert names("/api/v1/node-pools?sortBy=name&sortOrder=desc") == ["inference", "default"]
    assert names("/api/v1/node-pools?filterBy=name=^inf") == ["inference"]
    assert names(f"/api/v1/node-pools?filterBy=clusterId=={CID},phase==Ready&offset=1&limit=1") == [
        "inference"
    ]
    # equal values keep the blueprint's order
    assert names("/api/v1/node-pools?sortBy=createdAt&sortOrder=desc") == ["default", "inference"]
    assert "sortBy 'size'" in _error(get(api, "/api/v1/node-pools?sortBy=size"), 400)


def test_nodes_are_the_clusters_with_their_pool_and_gpus(api: RestApi) -> None:
    body = ok(api, f"/api/v1/clusters/{CID}/nodes")
    nodes = models.Nodes.from_dict(body).nodes
    assert [(n.name, n.node_pool) for n in nodes] == [
        (name, pool.name) for pool in BP.node_pools for name in pool.node_names()
    ]
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in node_objects(BP)}
    for n in nodes:
        assert n.status == "Ready" and n.cluster_uuid == CID
        assert n.gpu_info.gpu_type == labels[n.name]["nvidia.com/gpu.product"]
        assert str(n.gpu_info.gpu_count) == labels[n.name]["nvidia.com/gpu.count"]
    one = ok(api, f"/api/v1/clusters/{CID}/nodes?nodeName=dgxi-002")["nodes"]
    assert [n["name"] for n in one] == ["dgxi-002"]


def _quotas(resources: list[dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    return {
        r["nodePool"]["id"]: (r["gpu"]["deserved"], r["gpu"]["limit"], r["gpu"]["overQuotaWeight"])
        for r in resources
    }


def test_projects_carry_the_blueprints_quotas_and_node_pool_order(api: RestApi) -> None:
    body = ok(api, "/api/v1/org-unit/projects")
    assert set(body) == {"projects"}  # all on one page: no next
    for found, p in zip(body["projects"], BP.projects, strict=True):
        project = _project(found)
        assert (found["id"], project.name, project.parent_id) == (p.name, p.name, p.department)
        assert project.cluster_id == CID and found["createdAt"] == found["updatedAt"] == STARTED_ISO
        assert _quotas(found["resources"]) == {
            pool: (float(q.gpu), float(q.limit), float(q.over_quota_weight)) for pool, q in p.quotas.items()
        }
        assert found["totalResources"]["gpuQuota"] == sum(q.gpu for q in p.quotas.values())
        assert project.default_node_pools == BP.node_pool_priority(p.name)
        assert found["effective"]["defaultNodePools"] == BP.node_pool_priority(p.name)
        assert found["status"]["namespace"] == f"runai-{p.name}"
    team_c = _project(ok(api, "/api/v1/org-unit/projects/team-c"))
    assert team_c.default_node_pools == ["inference", "default"]
    assert _quotas(ok(api, "/api/v1/org-unit/projects/team-c")["resources"]) == {
        "default": (8.0, 16.0, 1.0),
        "inference": (16.0, 16.0, 1.0),
    }
    assert "project team-z not found" in _error(get(api, "/api/v1/org-unit/projects/team-z"), 404)


def test_projects_filter_sort_search_and_page(api: RestApi) -> None:
    names = lambda target: [p["name"] for p in ok(api, target)["projects"]]  # noqa: E731
    assert names("/api/v1/org-unit/projects?filterBy=parentName==research") == ["team-a", "team-b"]
    assert names("/api/v1/org-unit/projects?sortBy=totalGpuQuota&sortOrder=desc") == [
        "team-a",
        "team-c",
        "team-b",
    ]
    assert names("/api/v1/org-unit/projects?search=-c") == ["team-c"]
    page = ok(api, "/api/v1/org-unit/projects?limit=2")
    assert [p["name"] for p in page["projects"]] == ["team-a", "team-b"] and page["next"] == 2
    assert names("/api/v1/org-unit/projects?filterBy=createdAt>=2026-12-03T00:00:00Z") == []
    assert "does not compute" in _error(get(api, "/api/v1/org-unit/projects?sortBy=gpuAllocated"), 400)
    assert "does not compute" in _error(get(api, "/api/v1/org-unit/projects?filterBy=phase==Ready"), 400)


def test_departments_carry_the_blueprints_quotas(api: RestApi) -> None:
    body = ok(api, "/api/v1/org-unit/departments?verbosity=verbose")
    models.GetDepartments200Response.from_dict(body)  # its items are DepartmentForList
    assert [d["id"] for d in body["departments"]] == [d.name for d in BP.departments]
    research = _department(ok(api, "/api/v1/org-unit/departments/research"))
    assert (research.id, research.name, research.cluster_id) == ("research", "research", CID)
    assert research.total_resources.gpu_quota == 40.0
    product = ok(api, "/api/v1/org-unit/departments/product")
    assert _quotas(product["resources"]) == {"default": (8.0, -1.0, 1.0), "inference": (16.0, -1.0, 1.0)}
    by_quota = ok(api, "/api/v1/org-unit/departments?sortBy=totalGpuQuota")["departments"]
    assert [d["name"] for d in by_quota] == ["product", "research"]
    assert "not found" in _error(get(api, "/api/v1/org-unit/departments/nobody"), 404)


def test_the_telemetry_paths_are_not_taken_for_a_project_or_department(api: RestApi) -> None:
    assert ok(api, "/api/v1/org-unit/projects/telemetry?telemetryType=GPU_QUOTA")["type"] == "GPU_QUOTA"
    assert ok(api, "/api/v1/org-unit/departments/telemetry?telemetryType=GPU_QUOTA")["type"] == "GPU_QUOTA"


def test_the_node_pool_label_is_the_one_the_nodes_carry() -> None:
    assert org.NODE_POOL_LABEL_KEY == NODE_POOL_LABEL
