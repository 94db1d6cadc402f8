"""Run:ai construct: the ``runai_*`` families (Run:ai 2.18) and the Run:ai view of a cluster.

In a Run:ai lab the real KAI Scheduler decides on a real Kubernetes (:mod:`lab.kube`); this package
holds what the lab's driver adds to it: the workload mix it submits (``arrivals``), the plain state
its view of the API server's objects fills (``cluster_state``), the ``runai_*`` families computed from
that state (``series_runai``, rendered by ``expfmt``), and the bridge of GPUs to the DCGM shim
(``dcgm_bridge``). Run:ai's own control plane is proprietary, so its families are emulated at a pinned
docs version and carry only names those docs confirm (``signals/runai.md``, the table in
:mod:`lab.runai.sourced_families`). ``joins`` is the documented PromQL walk over the lab's series.
``api`` serves the control plane's Metrics and Telemetry API (reference 2.20) from the same state.
"""

RUNAI_DOCS_VERSION = "2.18"  # run-ai/docs docs/developer/metrics/metrics.md, 2.17/2.18 generation
