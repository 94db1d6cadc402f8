"""Every path the lab's Run:ai API serves, called through runapy 1.220.0 (Run:ai's own Python client)
and read into its own models, as a site's script meets it. Shared by the unit test (the API over a
scripted cluster) and the lab test (the real one).

runapy's ``Project``, ``Department`` and ``GetProjects200Response`` models carry the reference's report
shapes (``Project1``, ``Department1``) and refuse any org-unit answer, a real control plane's included
(signals/runai.md): projects are read with the models of their parts, departments with
``DepartmentForList``.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from runai import models
from runai.api_client import ApiClient
from runai.configuration import Configuration
from runai.runai_client import RunaiClient

WINDOW = datetime.timedelta(minutes=5)


def client(base_url: str, client_id: str, client_secret: str) -> RunaiClient:
    """The SDK as its README sets it up: token at once, refreshed before it expires (the default)."""
    configuration = Configuration(client_id=client_id, client_secret=client_secret, runai_base_url=base_url)
    return RunaiClient(ApiClient(configuration))


@dataclass
class Read:
    """Each answer as the SDK's models read it, by the SDK call that fetched it."""

    parsed: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def keep(self, call: str, answer: Any, model: Any) -> Any:
        self.raw[call] = answer
        self.parsed[call] = model(answer)
        return self.parsed[call]


def _one(model: Any) -> Any:
    return lambda answer: model.from_dict(answer)


def _each(model: Any, key: str) -> Any:
    return lambda answer: [model.from_dict(item) for item in answer[key]]


def _project(answer: dict[str, Any]) -> Any:
    """A project by the models of its parts (see the module's note)."""
    return (
        models.ProjectCreationRequest.from_dict(answer),
        models.ProjectStatus.from_dict(answer["status"]),
        models.TotalResources.from_dict(answer["totalResources"]),
        models.ProjectEffective.from_dict(answer["effective"]),
    )


def read_every_path(sdk: RunaiClient, now: datetime.datetime) -> Read:
    """Call every path the lab serves, once, with the SDK's own methods; every answer parsed."""
    org, work = sdk.organizations, sdk.workloads
    read = Read()
    window = {"start": now - WINDOW, "end": now, "number_of_samples": 5}
    clusters = read.keep(
        "get_clusters",
        org.clusters.get_clusters().data,
        lambda answer: [models.DisplayedCluster.from_dict(c) for c in answer],
    )
    cid = str(clusters[0].uuid)
    read.keep(
        "get_cluster_by_uuid",
        org.clusters.get_cluster_by_uuid(cluster_uuid=cid).data,
        _one(models.DisplayedCluster),
    )
    metrics = ["TOTAL_GPU", "ALLOCATED_GPU", "GPU_QUOTA", "TOTAL_GPU_NODES", "GPU_UTILIZATION"]
    read.keep(
        "get_cluster_metrics",
        org.clusters.get_cluster_metrics(cluster_uuid=cid, metric_type=metrics, **window).data,
        _one(models.MetricsResponse),
    )
    pools = read.keep(
        "get_nodepools", org.node_pools.get_nodepools().data, _each(models.Nodepool, "nodepools")
    )
    read.keep(
        "get_nodepool", org.node_pools.get_nodepool(nodepool_id=pools[0].id).data, _one(models.Nodepool)
    )
    read.keep(
        "get_nodepool_metrics",
        org.node_pools.get_nodepool_metrics(
            cluster_uuid=cid, nodepool_name=pools[0].name, metric_type=metrics, **window
        ).data,
        _one(models.MetricsResponse),
    )
    read.keep("get_nodes", org.nodes.get_nodes(cluster_uuid=cid).data, _one(models.Nodes))
    read.keep(
        "get_node_telemetry",
        org.nodes.get_node_telemetry(telemetry_type="ALLOCATED_GPUS", group_by=["Nodepool"]).data,
        _one(models.TelemetryResponse),
    )
    projects = read.keep(
        "get_projects", org.projects.get_projects().data, lambda a: [_project(p) for p in a["projects"]]
    )
    project_id = read.raw["get_projects"]["projects"][0]["id"]
    assert projects
    read.keep("get_project", org.projects.get_project(project_id=project_id).data, _project)
    read.keep(
        "get_projects_telemetry",
        org.projects.get_projects_telemetry(telemetry_type="GPU_ALLOCATION", group_by=["NodepoolId"]).data,
        _one(models.TelemetryResponse),
    )
    departments = read.keep(
        "get_departments",
        org.departments.get_departments().data,
        _each(models.DepartmentForList, "departments"),
    )
    read.keep(
        "get_department",
        org.departments.get_department(department_id=departments[0].id).data,
        _one(models.DepartmentForList),
    )
    read.keep(
        "get_departments_telemetry",
        org.departments.get_departments_telemetry(telemetry_type="GPU_QUOTA", group_by=["CLUSTER_ID"]).data,
        _one(models.TelemetryResponse),
    )
    workloads = read.keep(
        "get_workloads",
        work.workloads.get_workloads(sort_by="createdAt").data,
        _one(models.GetWorkloads200Response),
    )
    read.keep(
        "get_workloads_telemetry",
        work.workloads.get_workloads_telemetry(telemetry_type="WORKLOADS_COUNT", group_by=["ProjectId"]).data,
        _one(models.TelemetryResponse),
    )
    wid = workloads.workloads[0].id
    read.keep(
        "get_workload", work.workloads.get_workload(workload_id=wid).data, _one(models.WorkloadDetailed)
    )
    read.keep(
        "get_workload_metrics",
        work.workloads.get_workload_metrics(
            workload_id=wid, metric_type=["GPU_ALLOCATION", "POD_COUNT"], **window
        ).data,
        _one(models.MetricsResponse),
    )
    read.keep(
        "get_workload_pods", work.pods.get_workload_pods(workload_id=wid).data, _each(models.Pod1, "pods")
    )
    return read


# The SDK calls above, one per path the lab serves (the token is the client's construction).
CALLS = (
    "get_clusters",
    "get_cluster_by_uuid",
    "get_cluster_metrics",
    "get_nodepools",
    "get_nodepool",
    "get_nodepool_metrics",
    "get_nodes",
    "get_node_telemetry",
    "get_projects",
    "get_project",
    "get_projects_telemetry",
    "get_departments",
    "get_department",
    "get_departments_telemetry",
    "get_workloads",
    "get_workloads_telemetry",
    "get_workload",
    "get_workload_metrics",
    "get_workload_pods",
)
