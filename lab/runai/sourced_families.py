"""The single source of truth for every name the construct emits, with where it comes from.

Mirrors ``signals/runai.md``: a test scrapes the emulator and fails on any family or label that is not
in this table. HELP texts are byte-exact where the source code was read (KAI, kai-resource-management);
for Run:ai and kube-state-metrics families they are the documented descriptions (the exporters' own
HELP strings were not available, PENDING in ``signals/runai.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

# Citations: short key -> upstream file at a version (or docs page of a version).
SOURCES: dict[str, str] = {
    "runai-docs-2.18": "run-ai/docs docs/developer/metrics/metrics.md (2.17/2.18 generation, "
    "published as docs.run.ai/v2.18/developer/metrics/metrics/)",
    "kai-scheduler-metrics": "NVIDIA/KAI-Scheduler v0.13.0 pkg/scheduler/metrics/metrics.go",
    "kai-queue-metrics": "NVIDIA/KAI-Scheduler v0.13.0 pkg/queuecontroller/metrics/metrics.go",
    "kai-nodepool-metrics": "kai-scheduler/kai-resource-management "
    "pkg/nodepool-controller/nodepool_controller/metrics/metrics.go",
    "ksm-pod": "kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md",
    "ksm-node": "kubernetes/kube-state-metrics docs/metrics/cluster/node-metrics.md",
}


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    type: str  # gauge | counter | histogram
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

_KS = "kai-scheduler-metrics"
_KQ = "kai-queue-metrics"
# ExponentialBuckets(5, 2, 10) in metrics.go.
KAI_LATENCY_BUCKETS: tuple[float, ...] = tuple(5.0 * 2**i for i in range(10))

KAI_FAMILIES: tuple[Family, ...] = (
    Family(
        "kai_e2e_scheduling_latency_milliseconds",
        "gauge",
        "E2e scheduling latency in milliseconds (scheduling algorithm + binding), as a gauge",
        (),
        _KS,
    ),
    Family(
        "kai_open_session_latency_milliseconds",
        "gauge",
        "Open session latency in milliseconds, including all plugins, as a gauge",
        (),
        _KS,
    ),
    Family(
        "kai_close_session_latency_milliseconds",
        "gauge",
        "Close session latency in milliseconds, including all plugins, as a gauge",
        (),
        _KS,
    ),
    Family(
        "kai_action_scheduling_latency_milliseconds",
        "gauge",
        "Action scheduling latency in milliseconds, as a gauge",
        ("action",),
        _KS,
    ),
    Family(
        "kai_task_scheduling_latency_milliseconds",
        "histogram",
        "Task scheduling latency in milliseconds",
        (),
        _KS,
    ),
    Family(
        "kai_task_bind_latency_milliseconds",
        "histogram",
        "Task bind latency histogram in milliseconds",
        (),
        _KS,
    ),
    Family(
        "kai_podgroups_scheduled_by_action",
        "counter",
        "Count of podgroups scheduled per action",
        ("action",),
        _KS,
    ),
    Family(
        "kai_podgroups_acted_on_by_action", "counter", "Count of podgroups tried per action", ("action",), _KS
    ),
    Family(
        "kai_scenarios_simulation_by_action",
        "counter",
        "Count of scenarios simulated per action",
        ("action",),
        _KS,
    ),
    Family(
        "kai_total_preemption_attempts",
        "counter",
        "Total preemption attempts in the cluster till now",
        (),
        _KS,
    ),
    Family(
        "kai_queue_fair_share_cpu_cores",
        "gauge",
        "CPU Fair share of queue, as a gauge. Value is in Cores",
        ("queue_name",),
        _KS,
    ),
    Family(
        "kai_queue_fair_share_memory_gb",
        "gauge",
        "Memory Fair share of queue, as a gauge. Value is in GB",
        ("queue_name",),
        _KS,
    ),
    Family(
        "kai_queue_fair_share_gpu",
        "gauge",
        "GPU Fair share of queue, as a gauge. Values in GPU devices",
        ("queue_name",),
        _KS,
    ),
    Family(
        "kai_queue_cpu_usage",
        "gauge",
        "CPU usage of queue, as a gauge. Units depend on UsageDB configuration",
        ("queue_name",),
        _KS,
    ),
    Family(
        "kai_queue_memory_usage",
        "gauge",
        "Memory usage of queue, as a gauge. Units depend on UsageDB configuration",
        ("queue_name",),
        _KS,
    ),
    Family(
        "kai_queue_gpu_usage",
        "gauge",
        "GPU usage of queue, as a gauge. Units depend on UsageDB configuration",
        ("queue_name",),
        _KS,
    ),
    Family(
        "kai_pod_group_evicted_pods_total",
        "counter",
        "Total number of pods evicted per pod group",
        ("action", "namespace", "nodepool", "podgroup", "uid"),
        _KS,
    ),
    Family("kai_queue_info", "gauge", "Queues info", ("queue_name",), _KQ),
    Family("kai_queue_deserved_gpus", "gauge", "Queue deserved GPUs", ("queue_name",), _KQ),
    Family("kai_queue_quota_cpu_cores", "gauge", "Queue quota CPU", ("queue_name",), _KQ),
    Family("kai_queue_quota_memory_bytes", "gauge", "Queue quota memory", ("queue_name",), _KQ),
    Family("kai_queue_allocated_gpus", "gauge", "Queue allocated GPUs", ("queue_name",), _KQ),
    Family("kai_queue_allocated_cpu_cores", "gauge", "Queue allocated CPUs", ("queue_name",), _KQ),
    Family("kai_queue_allocated_memory_bytes", "gauge", "Queue allocated memory", ("queue_name",), _KQ),
)

# kube-state-metrics renders labels in its own order (defaults first); these tuples keep that order.
KSM_FAMILIES: tuple[Family, ...] = (
    Family(
        "kube_pod_info",
        "gauge",
        "Information about pod",
        (
            "namespace",
            "pod",
            "uid",
            "host_ip",
            "pod_ip",
            "node",
            "created_by_kind",
            "created_by_name",
            "priority_class",
            "host_network",
        ),
        "ksm-pod",
    ),
    Family(
        "kube_pod_status_phase",
        "gauge",
        "The pods current phase",
        ("namespace", "pod", "uid", "phase"),
        "ksm-pod",
    ),
    Family(
        "kube_pod_container_resource_requests",
        "gauge",
        "The number of requested request resource by a container",
        ("namespace", "pod", "uid", "container", "node", "resource", "unit"),
        "ksm-pod",
    ),
    Family(
        "kube_node_status_capacity",
        "gauge",
        "The total amount of resources available for a node",
        ("node", "resource", "unit"),
        "ksm-node",
    ),
    Family(
        "kube_node_status_allocatable",
        "gauge",
        "The amount of resources allocatable for pods (after reserving some for system daemons)",
        ("node", "resource", "unit"),
        "ksm-node",
    ),
    Family(
        "kube_node_status_condition",
        "gauge",
        "The condition of a cluster node",
        ("node", "condition", "status"),
        "ksm-node",
    ),
)

ALL_FAMILIES: dict[str, Family] = {f.name: f for f in (*RUNAI_FAMILIES, *KAI_FAMILIES, *KSM_FAMILIES)}
