"""Run:ai construct: the ``runai_*`` families (Run:ai docs 2.18) and the Run:ai view of a cluster.

In a Run:ai lab the real KAI Scheduler decides on a real Kubernetes (:mod:`lab.kube`); this package
holds what the lab's driver adds to it: the workload mix it submits (``arrivals``), the plain state
its view of the API server's objects fills and ``ClusterState``, what is read of that state
(``cluster_state``), the ``runai_*`` families computed from it (``series_runai``, rendered by
``expfmt``), and the bridge of GPUs to the DCGM shim (``dcgm_bridge``). Run:ai's own control plane is
proprietary, so its families are emulated at a pinned docs version and carry only names those docs
confirm (``signals/runai.md``, the table in ``sourced_families``). ``joins`` is the documented PromQL
walk over the lab's series. ``api`` serves the control plane's Metrics and Telemetry API (reference
2.20) from the same state.

This module is the construct's public face: what :mod:`lab.kube`, the tests and the benchmarks use of
it, and nothing else. Nothing in ``lab.runai`` is imported from outside the package but through here.
"""

from __future__ import annotations

from lab.runai.api import auth as rest_auth
from lab.runai.api.rest_server import serve as serve_rest
from lab.runai.api.routes import RestApi
from lab.runai.arrivals import Arrivals, poisson
from lab.runai.cluster_state import (
    CONTAINER,
    ClusterState,
    Node,
    Phase,
    Pod,
    PodPhase,
    Workload,
    namespace_of,
    nodes_of,
)
from lab.runai.dcgm_bridge import DcgmBridge, GpuStat
from lab.runai.expfmt import render
from lab.runai.joins import walk
from lab.runai.series_runai import runai_samples
from lab.runai.sourced_families import RUNAI_FAMILIES

__all__ = [
    "CONTAINER",
    "RUNAI_FAMILIES",
    "Arrivals",
    "ClusterState",
    "DcgmBridge",
    "GpuStat",
    "Node",
    "Phase",
    "Pod",
    "PodPhase",
    "RestApi",
    "Workload",
    "namespace_of",
    "nodes_of",
    "poisson",
    "render",
    "rest_auth",
    "runai_samples",
    "serve_rest",
    "walk",
]
