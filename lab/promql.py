"""A small client for Prometheus' HTTP API (/api/v1/query, /query_range, /targets)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any


class PrometheusError(RuntimeError):
    """Prometheus did not answer, or answered with an error; the message carries its text."""


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    value: float


def _get(base_url: str, path: str, params: dict[str, str], timeout_s: float = 30) -> Any:
    url = f"{base_url}{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = json.loads(error.read() or b"{}")
        raise PrometheusError(f"{path}: HTTP {error.code}: {body.get('error', '')}") from error
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise PrometheusError(f"{url}: {error}") from error
    if body.get("status") != "success":
        raise PrometheusError(f"{path}: {body.get('errorType')}: {body.get('error')}")
    return body["data"]


def query(base_url: str, promql: str, at: float | None = None) -> list[Series]:
    """An instant vector query; each result as labels and a float value."""
    params = {"query": promql}
    if at is not None:
        params["time"] = f"{at:.3f}"
    data = _get(base_url, "/api/v1/query", params)
    if data["resultType"] == "scalar":
        return [Series({}, float(data["result"][1]))]
    return [Series(item["metric"], float(item["value"][1])) for item in data["result"]]


def query_range(base_url: str, promql: str, start: float, end: float, step_s: float) -> list[dict[str, Any]]:
    """A range query: each result's ``metric`` and ``values`` ([[t, "v"], …])."""
    params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s}s"}
    result: list[dict[str, Any]] = _get(base_url, "/api/v1/query_range", params)["result"]
    return result


def raw_range(base_url: str, selector: str, at: float) -> list[dict[str, Any]]:
    """A range selector (``up[10m]``) evaluated at ``at``: each series' ``metric`` and its raw samples
    as stored, ``values`` ([[t, "v"], …]), with no step and no lookback filling a gap."""
    data = _get(base_url, "/api/v1/query", {"query": selector, "time": f"{at:.3f}"})
    if data["resultType"] != "matrix":
        raise PrometheusError(f"{selector}: expected a range selector, got a {data['resultType']}")
    result: list[dict[str, Any]] = data["result"]
    return result


def series(base_url: str, match: str, start: float, end: float) -> list[dict[str, str]]:
    """The label sets of every series ``match`` selects that has a sample between ``start`` and ``end``
    (``/api/v1/series``, which Prometheus and VictoriaMetrics both serve)."""
    params = {"match[]": match, "start": f"{start:.3f}", "end": f"{end:.3f}"}
    result: list[dict[str, str]] = _get(base_url, "/api/v1/series", params)
    return result


def targets(base_url: str) -> list[dict[str, Any]]:
    active: list[dict[str, Any]] = _get(base_url, "/api/v1/targets", {"state": "active"})["activeTargets"]
    return active


def alerts(base_url: str) -> list[dict[str, Any]]:
    """Every pending or firing alert of the alerting rules (/api/v1/alerts): labels, annotations,
    state, activeAt, value."""
    found: list[dict[str, Any]] = _get(base_url, "/api/v1/alerts", {})["alerts"]
    return found
