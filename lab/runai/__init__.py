"""Run:ai construct: the ``runai_*`` families (Run:ai 2.18) and the Run:ai view of a cluster.

In a Run:ai lab the real KAI Scheduler decides on a real Kubernetes (:mod:`lab.kube`); this package
computes the Run:ai families from that cluster's objects (``series_runai``) and bridges GPUs to the
DCGM shim (``dcgm_bridge``). Run:ai's own control plane is proprietary, so its families are emulated
at pinned versions and carry only names those sources confirm (``signals/runai.md``, the table in
:mod:`lab.runai.sourced_families`). The package also keeps an offline model of KAI's semantics,
served by ``lab runai serve`` and used by no ``lab up``; its data flow, one module per step::

    blueprint (YAML) -> arrivals (seeded workload mix) -> scheduler (KAI semantics, pure)
    -> simulation (lifecycle, allocation of specific GPUs, events, logs)
    -> series_* (Prometheus families) / telemetry (control-plane API) / dcgm_bridge (lab.dcgm shim)
    -> http_server (HTTP) and cli (``lab runai serve``)

Everything is stepped by a simulated clock and seeded, so a headless run
(:func:`lab.runai.simulation.run_headless`) repeats exactly.
"""

# Pinned upstream versions; every name the construct emits is sourced at one of these.
RUNAI_DOCS_VERSION = "2.18"  # run-ai/docs docs/developer/metrics/metrics.md, 2.17/2.18 generation
RUNAI_API_VERSION = "v1.224.0"  # runai-professional-services/runapy .generator/swagger.json tag
KAI_VERSION = "v0.13.0"  # NVIDIA/KAI-Scheduler tag (CHANGELOG: 2026-03-02)
