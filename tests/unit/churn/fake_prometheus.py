"""A small stand-in for Prometheus' HTTP API that answers exactly the queries `lab churn` asks.

A :class:`Scenario` says, per evaluation time, which DCGM GPUs carry which job ids; the server
derives every answer from it (F families per GPU, one node), as a real Prometheus would.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lab.churn.queries import queries
from tests.unit.loopback import serving

FAMILIES = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP")
GPUS = 2


@dataclass
class Scenario:
    step_s: int = 15
    # (from, to) evaluation times (inclusive, exclusive) → {gpu index: [job ids]}
    mapping: list[tuple[float, float, dict[int, list[str]]]] = field(default_factory=list)
    max_samples: int | None = None  # answer "too many samples" for longer range queries
    asked: list[str] = field(default_factory=list)

    def jobs_on(self, t: float) -> dict[int, list[str]]:
        for start, end, gpus in self.mapping:
            if start <= t < end:
                return gpus
        return {}

    def series(self, t: float) -> set[tuple[str, int, str]]:
        """(family, gpu, hpc_job or "") present at t."""
        present = set()
        on = self.jobs_on(t)
        for gpu in range(GPUS):
            for family in FAMILIES:
                for job in on.get(gpu) or [""]:
                    present.add((family, gpu, job))
        return present

    def answer(self, name: str, t: float) -> list[tuple[dict[str, str], float]]:
        now, before = self.series(t), self.series(t - self.step_s)
        labelled = [s for s in now if s[2]]
        per_gpu: dict[int, int] = {}
        for _, gpu, _ in labelled:
            per_gpu[gpu] = per_gpu.get(gpu, 0) + 1
        if name in ("created", "ended", "active"):
            chosen = {"created": now - before, "ended": before - now, "active": now}[name]
            counts: dict[str, int] = {}
            for family, _, _ in chosen:
                counts[family] = counts.get(family, 0) + 1
            return [({"job": "dcgm", "__name__": f}, n) for f, n in counts.items()]
        if name == "hpc_job":
            jobs: dict[str, int] = {}
            for _, _, job in labelled:
                jobs[job] = jobs.get(job, 0) + 1
            return [({"hpc_job": j}, n) for j, n in jobs.items()]
        if name == "labelled_gpus":
            return [({}, len(per_gpu))] if per_gpu else []
        if name == "busiest_gpu":
            return [({}, max(per_gpu.values()))] if per_gpu else []
        if name == "families_per_gpu":
            return [({}, len(FAMILIES))]
        if name == "nodes_by_gpus":
            return [({"gpus": str(GPUS)}, 1)]
        if name.startswith("node_at_rest"):
            return [] if labelled else [({}, len(now) + 5)]
        if name == "up":
            return [({"job": "dcgm"}, 1)]
        return [({"job": "dcgm"}, 0.01)]


class _Handler(BaseHTTPRequestHandler):
    scenario: Scenario
    names: dict[str, str]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        params = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        if url.path == "/api/v1/targets":
            targets = [{"labels": {"job": "dcgm", "instance": "dgx-001:9400"}, "scrapeInterval": "15s"}]
            return self._send({"activeTargets": targets})
        query = params.get("query", "")
        self.scenario.asked.append(query)
        if url.path == "/api/v1/query":
            if query.startswith("count by (__name__)"):  # which GPU families the exporter sends
                result = [{"metric": {"__name__": f}, "value": [0, "2"]} for f in FAMILIES]
            else:
                value = 1000.0 if "head_series" in query else 7.0
                result = [{"metric": {}, "value": [0, str(value)]}]
            return self._send({"resultType": "vector", "result": result})
        start, end = float(params["start"]), float(params["end"])
        step = float(params["step"].rstrip("s"))
        steps = round((end - start) / step) + 1
        limit = self.scenario.max_samples
        if limit is not None and steps > limit:
            body = {
                "status": "error",
                "errorType": "execution",
                "error": "query processing would load too many samples",
            }
            return self._send(body, status=422)
        name = self.names.get(query)
        if name is None:
            return self._send({"status": "error", "errorType": "bad_data", "error": f"unknown {query}"}, 400)
        result: dict[tuple[tuple[str, str], ...], list[list[Any]]] = {}
        for k in range(steps):
            t = start + k * step
            for labels, value in self.scenario.answer(name, t):
                result.setdefault(tuple(sorted(labels.items())), []).append([t, str(value)])
        matrix = [{"metric": dict(key), "values": values} for key, values in result.items()]
        self._send({"resultType": "matrix", "result": matrix})

    def _send(self, data: dict[str, Any], status: int = 200) -> None:
        body = json.dumps(data if "status" in data else {"status": "success", "data": data}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve(scenario: Scenario) -> Iterator[str]:
    handler = type("Handler", (_Handler,), {"scenario": scenario})
    asked = queries("dcgm", scenario.step_s, fresh_s=16, witness="DCGM_FI_DEV_GPU_UTIL")
    handler.names = {text: name for name, text in asked.items()}
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), handler)) as url:
        yield url
