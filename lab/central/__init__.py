"""The site's centre beyond the fence, built on the host: the central metrics store (VictoriaMetrics
single-node, with vmalert for the central rules), the central log store (VictoriaLogs) and the one
egress gateway between the site and them (an OpenTelemetry Collector made by the collector's own builder
from ``collector_manifest``). ``builds`` makes each binary once per version set and caches it under the
state root; nothing here starts them yet."""
