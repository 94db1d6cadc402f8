"""The egress gateway's collector as the OpenTelemetry Collector's builder is told to make it: its
manifest, rendered from the pins in ``lab/versions.py`` (pure).

The components, each in its Go module at its pinned version, and the type a collector configuration
names it by at that version:

- receivers: contrib's ``prometheus`` (scrapes the site's egress rules) and ``file_log`` (reads the
  job-log lines; ``filelog`` is its deprecated alias);
- processors: core's ``memory_limiter``, contrib's ``redaction`` (the keyed pseudonyms) and core's
  ``batch``;
- exporters: contrib's ``prometheus_remote_write`` (to VictoriaMetrics' ``/api/v1/write``) and core's
  ``otlp_http`` (to VictoriaLogs' ``/insert/opentelemetry/v1/logs``, which takes OTLP/HTTP in protobuf, the
  exporter's default encoding);
- extensions: contrib's ``file_storage``, where the exporters' queues survive the gateway's restart;
- confmap providers: core's ``env`` and ``file`` only (the configuration and its key come from files
  and the environment, never over HTTP).

Every core module is at the core release (v0.x) or its stable line (v1.x), every contrib module at the
contrib release: one release throughout. The manifest names no path of this machine, so its bytes,
and the cache key made of them, are the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lab import versions

DIST_NAME = "otelcol-lab"
DIST_MODULE = "aifactory-lab/otelcol-lab"  # the generated main module's path (no one imports it)
OUTPUT_PATH = f"./{DIST_NAME}"  # relative to the manifest's directory, where the builder runs
KINDS = ("extensions", "receivers", "processors", "exporters", "providers")


@dataclass(frozen=True)
class Component:
    kind: str  # one of KINDS: the manifest's list it is in
    module: str  # its Go module (and package)
    version: str
    type: str  # what a collector configuration calls it at that version ("" for a confmap provider)

    @property
    def gomod(self) -> str:
        return f"{self.module} {self.version}"


def _core(path: str, kind: str, type_: str, stable: bool = False) -> Component:
    version = versions.OTELCOL_CORE_STABLE_VERSION if stable else versions.OTELCOL_CORE_VERSION
    return Component(kind, f"{versions.OTELCOL_CORE_MODULE}/{path}", version, type_)


def _contrib(path: str, kind: str, type_: str) -> Component:
    return Component(
        kind, f"{versions.OTELCOL_CONTRIB_MODULE}/{path}", versions.OTELCOL_CONTRIB_VERSION, type_
    )


def components() -> tuple[Component, ...]:
    """What the gateway is built with, in the manifest's order (read from the pins at each call)."""
    return (
        _contrib("extension/storage/filestorage", "extensions", "file_storage"),
        _contrib("receiver/prometheusreceiver", "receivers", "prometheus"),
        _contrib("receiver/filelogreceiver", "receivers", "file_log"),
        _core("processor/memorylimiterprocessor", "processors", "memory_limiter"),
        _contrib("processor/redactionprocessor", "processors", "redaction"),
        _core("processor/batchprocessor", "processors", "batch"),
        _contrib("exporter/prometheusremotewriteexporter", "exporters", "prometheus_remote_write"),
        _core("exporter/otlphttpexporter", "exporters", "otlp_http"),
        _core("confmap/provider/envprovider", "providers", "", stable=True),
        _core("confmap/provider/fileprovider", "providers", "", stable=True),
    )


def render() -> str:
    """The builder's manifest (``builder --config``): ``dist`` and one list per kind, ``gomod`` each."""
    lines = [
        "# The lab's egress gateway, rendered by lab/central/collector_manifest.py from lab/versions.py.",
        "dist:",
        f"  name: {DIST_NAME}",
        "  description: The lab's egress gateway (OpenTelemetry Collector)",
        f"  module: {DIST_MODULE}",
        f"  version: {versions.OTELCOL_CONTRIB_VERSION.lstrip('v')}",
        f"  output_path: {OUTPUT_PATH}",
    ]
    for kind in KINDS:
        lines.append(f"{kind}:")
        lines += [f"  - gomod: {c.gomod}" for c in components() if c.kind == kind]
    return "\n".join(lines) + "\n"


_REQUIRE = re.compile(r"^\s*(?:require\s+)?([A-Za-z0-9./_~-]+)\s+(v[0-9][^\s]*)")


def drift(go_mod: str) -> list[str]:
    """Each component whose version in the generated ``go.mod`` (after ``go mod tidy``) is not its pin,
    as ``module: pinned → resolved`` (or ``module: pinned → missing``); empty when none moved."""
    resolved: dict[str, str] = {}
    for line in go_mod.splitlines():
        if (match := _REQUIRE.match(line.split("//", 1)[0])) is not None:
            resolved[match.group(1)] = match.group(2)
    return [
        f"{c.module}: {c.version} → {resolved.get(c.module, 'missing')}"
        for c in components()
        if resolved.get(c.module) != c.version
    ]
