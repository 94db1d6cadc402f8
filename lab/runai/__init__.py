"""Run:ai construct: an emulator of the Run:ai / KAI scheduler path, built from vendor sources.

Neither Run:ai (proprietary, needs Kubernetes) nor its open-sourced scheduler KAI can run in the lab,
so this package emulates them at pinned versions and emits only names those sources confirm
(``signals/runai.md``, and the table in :mod:`lab.runai.sourced_families`). Data flow, one module per step::

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
