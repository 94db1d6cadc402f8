"""The single source of truth for every name the construct emits, with where it comes from.

Mirrors ``signals/runai.md``: :mod:`lab.runai.expfmt` refuses a sample that is not in this table, and a
unit test renders a busy cluster through the driver and fails on any family or label missing here or
left unused. HELP texts are the documented descriptions (the Run:ai exporters' own HELP strings were not
available, PENDING in ``signals/runai.md``); ``runai_node_nodepool``'s is kai-resource-management's.
"""

from __future__ import annotations

from dataclasses import dataclass

# Citations: short key -> upstream file at a version (or docs page of a version).
SOURCES: dict[str, str] = {
    "runai-docs-2.18": "run-ai/docs docs/developer/metrics/metrics.md (2.17/2.18 generation, "
    "published as docs.run.ai/v2.18/developer/metrics/metrics/)",
    "kai-nodepool-metrics": "kai-scheduler/kai-resource-management "
    "pkg/nodepool-controller/nodepool_controller/metrics/metrics.go",
}


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    type: str  # gauge | counter
    help: str
    labels: tuple[str, ...]
    source: str  # key of SOURCES

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"family {self.name}: unknown source {self.source!r}")


_GPU = ("clusterId", "gpu", "node")
_NODE = ("clusterId", "node")
_WORKLOAD = ("clusterId", "user", "workload_id", "workload_name", "workload_type")
_POD = ("clusterId", "node", "pod_name", "pod_namespace", "pod_uuid")
_D = "runai-docs-2.18"

RUNAI_FAMILIES: tuple[Family, ...] = (
    Family(
        "runai_active_job_cpu_requested_cores",
        "gauge",
        "Workload's requested CPU cores",
        ("clusterId", "job_name", "job_uuid"),
        _D,
    ),
    Family(
        "runai_active_job_memory_requested_bytes",
        "gauge",
        "Workload's requested CPU memory",
        ("clusterId", "job_name", "job_uuid"),
        _D,
    ),
    Family("runai_allocated_gpu_count_per_gpu", "gauge", "Is a GPU hosting a pod", _GPU, _D),
    Family("runai_last_gpu_utilization_time_per_gpu", "gauge", "Last time GPU was not idle", _GPU, _D),
    Family(
        "runai_requested_gpu_memory_mb_per_workload",
        "gauge",
        "Requested GPU memory per workload (0 if not specified by the user)",
        ("clusterId", "job_name", "job_type", "job_uuid", "project", "workload_id"),
        _D,
    ),
    Family(
        "runai_requested_gpus_per_workload",
        "gauge",
        "Number of requested GPUs per workload",
        ("clusterId", "project", "workload_id", "workload_name", "workload_type"),
        _D,
    ),
    Family(
        "runai_run_time_seconds_per_workload",
        "gauge",
        "Total run time per workload",
        ("clusterId", "workload_id", "workload_name"),
        _D,
    ),
    Family(
        "runai_wait_time_seconds_per_workload",
        "gauge",
        "Total wait time per workload",
        ("clusterId", "workload_id", "workload_name"),
        _D,
    ),
    Family(
        "runai_node_cpu_requested_cores",
        "gauge",
        "Sum of the requested CPU cores of all workloads running in a node",
        _NODE,
        _D,
    ),
    Family(
        "runai_node_requested_memory_bytes",
        "gauge",
        "Sum of the requested CPU memory of all workloads running in a node",
        _NODE,
        _D,
    ),
    Family(
        "runai_project_guaranteed_gpus",
        "gauge",
        "Guaranteed GPU quota per project",
        ("clusterId", "project"),
        _D,
    ),
    Family(
        "runai_project_info",
        "gauge",
        "Information on CPU, CPU memory, GPU quota per project",
        ("clusterId", "cpu_quota", "department", "gpu_guaranteed_quota", "memory_quota", "project"),
        _D,
    ),
    Family(
        "runai_queue_info",
        "gauge",
        "Information on CPU, CPU memory, GPU quota per project/department per nodepool",
        (
            "clusterId",
            "cpu_quota",
            "department",
            "gpu_guaranteed_quota",
            "memory_quota",
            "nodepool",
            "queue_name",
        ),
        _D,
    ),
    Family("runai_mig_mode_gpu_count", "gauge", "Number of GPUs on MIG nodes", _NODE, _D),
    Family("runai_gpu_utilization_per_gpu", "gauge", "GPU Utilization per GPU", _GPU, _D),
    Family("runai_gpu_utilization_per_node", "gauge", "GPU Utilization per Node", _NODE, _D),
    Family("runai_gpu_memory_used_mebibytes_per_gpu", "gauge", "Used GPU memory per GPU", _GPU, _D),
    Family("runai_gpu_memory_used_mebibytes_per_node", "gauge", "Used GPU memory per Node", _NODE, _D),
    Family("runai_gpu_memory_total_mebibytes_per_gpu", "gauge", "Total GPU memory per GPU", _GPU, _D),
    Family("runai_gpu_memory_total_mebibytes_per_node", "gauge", "Total GPU memory per Node", _NODE, _D),
    Family(
        "runai_gpu_count_per_node",
        "gauge",
        "Number of GPUs per Node",
        ("clusterId", "modelName", "node", "ready", "schedulable"),
        _D,
    ),
    Family(
        "runai_allocated_gpu_count_per_workload",
        "gauge",
        "Number of allocated GPUs per Workload",
        _WORKLOAD,
        _D,
    ),
    Family(
        "runai_allocated_gpu_count_per_project",
        "gauge",
        "Number of allocated GPUs per Project",
        ("clusterId", "project"),
        _D,
    ),
    Family(
        "runai_gpu_memory_used_mebibytes_per_pod_per_gpu",
        "gauge",
        "Used GPU Memory per Pod, per Gpu on which the workload is running",
        (*_POD, "gpu"),
        _D,
    ),
    Family(
        "runai_gpu_memory_used_mebibytes_per_workload", "gauge", "Used GPU Memory per Workload", _WORKLOAD, _D
    ),
    Family(
        "runai_gpu_utilization_per_pod_per_gpu",
        "gauge",
        "GPU Utilization per Pod per GPU",
        (*_POD, "gpu"),
        _D,
    ),
    Family(
        "runai_gpu_utilization_per_workload", "gauge", "Average GPU Utilization per Workload", _WORKLOAD, _D
    ),
    Family(
        "runai_gpu_utilization_per_project",
        "gauge",
        "Average GPU Utilization per Project",
        ("clusterId", "project"),
        _D,
    ),
    Family(
        "runai_last_gpu_utilization_time_per_workload",
        "gauge",
        "The Last Time (Unix Timestamp) That The Workload Utilized Any Of Its Allocated GPUs",
        _WORKLOAD,
        _D,
    ),
    Family(
        "runai_gpu_idle_seconds_per_workload",
        "gauge",
        "Seconds Passed Since The Workload Utilized Any Of Its Allocated GPUs",
        _WORKLOAD,
        _D,
    ),
    Family("runai_allocated_gpu_count_per_pod", "gauge", "Number Of Allocated GPUs per Pod", _POD, _D),
    Family("runai_allocated_gpu_count_per_node", "gauge", "Number Of Allocated GPUs per Node", _NODE, _D),
    Family("runai_allocated_millicpus_per_pod", "gauge", "Number Of Allocated Millicpus per Pod", _POD, _D),
    Family("runai_allocated_memory_per_pod", "gauge", "Allocated Memory per Pod", _POD, _D),
    Family(
        "runai_node_nodepool", "gauge", "the node's nodepool", ("node", "nodepool"), "kai-nodepool-metrics"
    ),
)

FAMILIES_BY_NAME: dict[str, Family] = {f.name: f for f in RUNAI_FAMILIES}
