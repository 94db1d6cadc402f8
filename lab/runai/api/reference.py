"""What the Run:ai 2.20 API reference defines for the endpoints the lab serves, and which of it the lab
computes (runapy ``.generator/swagger.json`` at tag v1.220.0; each value with its schema name in
``signals/runai.md``). A documented value the lab does not compute is answered with 400 and a message
naming cantfind.md, never with a made-up number.
"""

from __future__ import annotations

# components.parameters.MetricsType: metricType of the cluster and node-pool metrics paths.
CLUSTER_METRIC_TYPES = (
    "TOTAL_GPU_NODES",
    "GPU_UTILIZATION",
    "GPU_UTILIZATION_DISTRIBUTION",
    "GPU_MEMORY_UTILIZATION",
    "CPU_UTILIZATION",
    "CPU_MEMORY_UTILIZATION",
    "TOTAL_GPU",
    "GPU_QUOTA",
    "ALLOCATED_GPU",
    "UNALLOCATED_GPU",
    "AVG_WORKLOAD_WAIT_TIME",
)
CLUSTER_METRICS_SERVED = ("TOTAL_GPU_NODES", "GPU_UTILIZATION", "TOTAL_GPU", "GPU_QUOTA", "ALLOCATED_GPU")

# components.parameters.WorkloadMetricTypes: metricType of /api/v1/workloads/{workloadId}/metrics.
WORKLOAD_METRIC_TYPES = (
    "GPU_UTILIZATION",
    "GPU_MEMORY_USAGE_BYTES",
    "GPU_MEMORY_REQUEST_BYTES",
    "CPU_USAGE_CORES",
    "CPU_REQUEST_CORES",
    "CPU_LIMIT_CORES",
    "CPU_MEMORY_USAGE_BYTES",
    "CPU_MEMORY_REQUEST_BYTES",
    "CPU_MEMORY_LIMIT_BYTES",
    "POD_COUNT",
    "RUNNING_POD_COUNT",
    "GPU_ALLOCATION",
)
WORKLOAD_METRICS_SERVED = (
    "GPU_UTILIZATION",
    "GPU_MEMORY_USAGE_BYTES",
    "CPU_REQUEST_CORES",
    "CPU_MEMORY_REQUEST_BYTES",
    "POD_COUNT",
    "RUNNING_POD_COUNT",
    "GPU_ALLOCATION",
)

# components.parameters.TelemetryType (nodes), TelemetryType1 (projects, departments), TelemetryType2
# (workloads), and the groupBy enums TelemetryGroupBy, TelemetryGroupByProject,
# TelemetryGroupByDepartment, TelemetryGroupBy1 (each maxItems 2).
NODE_TELEMETRY_TYPES = (
    "READY_GPU_NODES",
    "READY_GPUS",
    "TOTAL_GPU_NODES",
    "TOTAL_GPUS",
    "IDLE_ALLOCATED_GPUS",
    "FREE_GPUS",
    "ALLOCATED_GPUS",
    "TOTAL_CPU_CORES",
    "USED_CPU_CORES",
    "ALLOCATED_CPU_CORES",
    "TOTAL_GPU_MEMORY_BYTES",
    "USED_GPU_MEMORY_BYTES",
    "TOTAL_CPU_MEMORY_BYTES",
    "USED_CPU_MEMORY_BYTES",
    "ALLOCATED_CPU_MEMORY_BYTES",
)
NODE_TELEMETRY_SERVED = (
    "READY_GPU_NODES",
    "READY_GPUS",
    "TOTAL_GPU_NODES",
    "TOTAL_GPUS",
    "FREE_GPUS",
    "ALLOCATED_GPUS",
    "TOTAL_CPU_CORES",
    "ALLOCATED_CPU_CORES",
    "TOTAL_GPU_MEMORY_BYTES",
    "USED_GPU_MEMORY_BYTES",
    "TOTAL_CPU_MEMORY_BYTES",
    "ALLOCATED_CPU_MEMORY_BYTES",
)
NODE_GROUP_BY = ("ClusterId", "Nodepool", "Node")
ORG_TELEMETRY_TYPES = (
    "GPU_QUOTA",
    "CPU_QUOTA",
    "MEMORY_QUOTA",
    "GPU_ALLOCATION",
    "CPU_ALLOCATION",
    "MEMORY_ALLOCATION",
    "GPU_ALLOCATION_NON_PREEMPTIBLE",
    "CPU_ALLOCATION_NON_PREEMPTIBLE",
    "MEMORY_ALLOCATION_NON_PREEMPTIBLE",
)
ORG_TELEMETRY_SERVED = ("GPU_QUOTA", "GPU_ALLOCATION", "GPU_ALLOCATION_NON_PREEMPTIBLE", "CPU_ALLOCATION")
PROJECT_GROUP_BY = ("ClusterId", "NodepoolId", "ParentId")
DEPARTMENT_GROUP_BY = ("CLUSTER_ID",)
WORKLOAD_TELEMETRY_TYPES = ("WORKLOADS_COUNT", "GPU_ALLOCATION")
WORKLOAD_GROUP_BY = ("ClusterId", "DepartmentId", "ProjectId", "Type", "CurrentNodepools", "Phase")
GROUP_BY_MAX_ITEMS = 2

# components.parameters.NumberOfSamples; Limit.
SAMPLES_MIN, SAMPLES_MAX, SAMPLES_DEFAULT = 0, 1000, 20
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 500, 50

# components.parameters.WorkloadsSort (the lab sorts by these of its fields) and WorkloadsFilter.
WORKLOADS_SORT_BY = (
    "type",
    "name",
    "clusterId",
    "projectId",
    "projectName",
    "departmentId",
    "departmentName",
    "createdAt",
    "deletedAt",
    "submittedBy",
    "phase",
    "completedAt",
    "nodepool",
    "distributedFramework",
    "allocatedGPU",
    "idleGpus",
    "idleAllocatedGpus",
)
# The fields the lab keeps of its workloads, for sortBy and filterBy (no deletions, frameworks or idleness).
WORKLOAD_FIELDS_SERVED = tuple(
    f
    for f in WORKLOADS_SORT_BY
    if f not in ("deletedAt", "distributedFramework", "idleGpus", "idleAllocatedGpus")
)
SORT_ORDERS = ("asc", "desc")
# WorkloadsFilter's pattern: field-name, operator, value; the operators in its description's words.
FILTER_OPERATORS = ("==", "!=", "<=", ">=", "=@", "!@", "=^", "=$")

# components.schemas.TokenRequest: its properties, and grantType's enum.
TOKEN_REQUEST_FIELDS = (
    "grantType",
    "appID",
    "appSecret",
    "code",
    "redirectUri",
    "refreshToken",
    "username",
    "password",
    "clientID",
    "clientSecret",
)
GRANT_TYPES = ("app_token", "client_credentials", "refresh_token", "exchange_token", "password")
# The grants the lab honours, and the TokenRequest fields each reads: the lab's one application.
GRANTS_SERVED = {"app_token": ("appID", "appSecret"), "client_credentials": ("clientID", "clientSecret")}

# components.parameters.QueryVerbosity (clusters) and DepartmentsVerbosity (components.schemas.Verbosity):
# accepted; the lab answers every field it has at any verbosity.
CLUSTER_VERBOSITY = ("metadata", "full")
DEPARTMENT_VERBOSITY = ("meta", "brief", "verbose")

# components.schemas.NodepoolSortFilterFields (sortBy); NodepoolsFilterBy's pattern (filterBy).
NODEPOOL_SORT_BY = ("name", "phase", "clusterId", "createdAt", "updatedAt")
NODEPOOL_FILTER_BY = ("name", "clusterId", "phase")
# components.schemas.ProjectFilterSortFields (sortBy; ProjectsFilterBy's pattern lists the same fields).
PROJECT_SORT_BY = (
    "name",
    "clusterId",
    "departmentId",
    "parentId",
    "parentName",
    "phase",
    "totalGpuQuota",
    "gpuAllocated",
    "createdAt",
    "avgGpuAllocation24h",
    "avgGpuUtilization24h",
    "avgGpuAllocation7d",
    "avgGpuUtilization7d",
    "avgGpuAllocation30d",
    "avgGpuUtilization30d",
)
# components.schemas.DepartmentFilterSortFields (sortBy; DepartmentsFilterBy's pattern, the same).
DEPARTMENT_SORT_BY = tuple(
    f for f in PROJECT_SORT_BY if f not in ("departmentId", "parentId", "parentName", "phase")
)
# The fields the lab keeps of its projects and departments (no phase, allocation history or averages).
PROJECT_FIELDS_SERVED = (
    "name",
    "clusterId",
    "departmentId",
    "parentId",
    "parentName",
    "totalGpuQuota",
    "createdAt",
)
DEPARTMENT_FIELDS_SERVED = ("name", "clusterId", "totalGpuQuota", "createdAt")
