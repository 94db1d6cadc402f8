"""The documented query: from a failed workload to its pods, GPUs (index, UUID) and nodes.

No source emits exemplars, so the walk is a PromQL join over emitted series only:
kube-state-metrics (pod -> owner workload, phase), dcgm-exporter in Kubernetes mode (GPU -> pod while
allocated; the XID stays on the GPU after the pod is gone) and ``runai_node_nodepool`` (node -> pool).
Because a failed pod releases its GPUs, the GPU -> pod step looks back over a window
(``last_over_time``). With static scrape configs the DCGM labels stay ``pod``/``namespace``; a
Kubernetes-SD scrape that adds its own would rename them ``exported_pod``/``exported_namespace``.

:func:`walk` gives the PromQL (for the live tests against real Prometheus) and the expected
rows; :func:`evaluate` applies the same join to parsed scrapes, for unit tests without Prometheus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Series = tuple[str, dict[str, str], float]


@dataclass(frozen=True, slots=True, order=True)
class Row:
    workload: str
    namespace: str
    pod: str
    node: str
    gpu: str
    uuid: str
    nodepool: str
    xid: str


@dataclass(frozen=True, slots=True)
class Walk:
    steps: tuple[tuple[str, str], ...]  # (what it answers, PromQL)
    combined: str
    expected: tuple[Row, ...]


def walk(workload: str, namespace: str, expected: Sequence[Row], window: str = "1h") -> Walk:
    pods = f'kube_pod_info{{namespace="{namespace}", created_by_name="{workload}"}}'
    gpu_util = f'DCGM_FI_DEV_GPU_UTIL{{namespace="{namespace}"}}'
    held = (
        f"group by (namespace, pod, Hostname, gpu, UUID) (last_over_time({gpu_util}[{window}]) "
        f"* on (namespace, pod) group_left () group by (namespace, pod) (last_over_time({pods}[{window}])))"
    )
    steps = (
        (
            "failed workloads (owner of a pod in phase Failed)",
            "group by (namespace, created_by_name) (kube_pod_info * on (namespace, pod, uid) group_left () "
            '(kube_pod_status_phase{phase="Failed"} == 1))',
        ),
        (
            "its Run:ai workload id",
            "group by (workload_id, workload_name, project) "
            f'(runai_requested_gpus_per_workload{{workload_name="{workload}"}})',
        ),
        ("its pods, their uid and node", pods),
        ("the GPUs (index, UUID, node) those pods held in the window", held),
        ("the XID now on those GPUs", "DCGM_FI_DEV_XID_ERRORS > 0"),
        ("the node pool of those nodes", "runai_node_nodepool == 1"),
    )
    combined = (
        "(DCGM_FI_DEV_XID_ERRORS > 0)\n"
        "* on (Hostname, gpu, UUID) group_left (namespace, pod)\n"
        "  group by (Hostname, gpu, UUID, namespace, pod) (\n"
        f"    last_over_time({gpu_util}[{window}])\n"
        "    * on (namespace, pod) group_left ()\n"
        f"      group by (namespace, pod) (last_over_time({pods}[{window}]))\n"
        "  )\n"
        "* on (Hostname) group_left (nodepool)\n"
        "  group by (Hostname, nodepool) "
        '(label_replace(runai_node_nodepool == 1, "Hostname", "$1", "node", "(.+)"))'
    )
    return Walk(steps, combined, tuple(sorted(expected)))


def evaluate(history: Sequence[Sequence[Series]], workload: str, namespace: str) -> tuple[Row, ...]:
    """The combined query's join over scrapes (oldest first); the last scrape is "now"."""
    if not history:
        return ()
    owned = {
        (labels["namespace"], labels["pod"])
        for scrape in history
        for name, labels, _ in scrape
        if name == "kube_pod_info"
        and labels.get("namespace") == namespace
        and labels.get("created_by_name") == workload
    }
    held = {
        (labels["Hostname"], labels["gpu"], labels["UUID"], labels["namespace"], labels["pod"])
        for scrape in history
        for name, labels, _ in scrape
        if name == "DCGM_FI_DEV_GPU_UTIL" and (labels.get("namespace"), labels.get("pod")) in owned
    }
    now = history[-1]
    pools = {
        labels["node"]: labels["nodepool"]
        for name, labels, v in now
        if name == "runai_node_nodepool" and v == 1
    }
    rows = []
    for name, labels, value in now:
        if name != "DCGM_FI_DEV_XID_ERRORS" or value <= 0:
            continue
        for host, gpu, uuid, ns, pod in held:
            if (labels["Hostname"], labels["gpu"], labels["UUID"]) == (host, gpu, uuid) and host in pools:
                rows.append(Row(workload, ns, pod, host, gpu, uuid, pools[host], labels["err_code"]))
    return tuple(sorted(set(rows)))
