"""Log lines in the shape dcgm-exporter writes them (Go ``log/slog`` text handler, the default).

Upstream line: ``time=2025-11-13T14:55:40.596Z level=INFO msg="HPC job mapping is enabled and
watch for the \\"/var/lib/dcgm-exporter/job-mapping\\" directory"``. Attributes passed as
``extra={"attrs": {...}}`` follow ``msg``; emulated nodes add ``node=<name>`` (lab-only) so the
lines of one rack container stay apart.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_LEVELS = {"WARNING": "WARN", "CRITICAL": "ERROR"}


def _quote(value: str) -> str:
    """slog quotes a value when it is empty or has spaces, '=', '"' or control characters."""
    if value and value.isprintable() and not any(ch in value for ch in ' ="'):
        return value
    return json.dumps(value, ensure_ascii=False)


class SlogTextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        parts = [
            f"time={stamp}.{int(record.msecs):03d}Z",
            f"level={_LEVELS.get(record.levelname, record.levelname)}",
            f"msg={_quote(record.getMessage())}",
        ]
        attrs: dict[str, Any] = dict(getattr(record, "attrs", {}) or {})
        node = getattr(record, "node", None)
        if node:
            attrs.setdefault("node", node)
        parts.extend(f"{key}={_quote(str(value))}" for key, value in attrs.items())
        return " ".join(parts)


class _NodeFilter(logging.Filter):
    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def filter(self, record: logging.LogRecord) -> bool:
        record.node = self.node
        return True


def node_logger(node: str) -> logging.Logger:
    """The logger of one emulated node; its records carry ``node=<name>``."""
    log = logging.getLogger(f"lab.dcgm.node.{node}")
    if not any(isinstance(f, _NodeFilter) for f in log.filters):
        log.addFilter(_NodeFilter(node))
    return log


def configure() -> None:
    """Send ``lab.dcgm`` logs to stderr in slog text form (the CLI calls this, tests do not)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SlogTextFormatter())
    root = logging.getLogger("lab.dcgm")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)  # --debug lowers it once the flags are parsed
    root.propagate = False
