"""The Run:ai control-plane REST API's Metrics and Telemetry endpoints, and the cluster, node-pool,
node, project and department listings a script reads first, served by the lab's driver.

Pinned to the Run:ai API reference 2.20 (runai-professional-services/runapy ``.generator/swagger.json``
at tag v1.220.0; docs.run.ai/v2.20/developer/metrics/metrics-api/ and .../developer/rest-auth/). Every
path, parameter, enum value and field served is listed with its source in ``signals/runai.md``.

Data flow: the driver's view of the API server (:mod:`lab.kube.view`) → ``measures`` (values, pure) →
``history`` (kept per Prometheus scrape step) → ``routes`` (parameters from ``params``, workloads from
``objects``, the cluster and its organisation from ``org``, telemetry from ``telemetry``, bearer tokens
from ``auth``) → ``rest_server`` (HTTP).
"""

RUNAI_API_VERSION = "2.20"  # runapy tag v1.220.0 (info.version 2.2, a YAML float of 2.20)
