"""Benchmark the Run:ai construct at the shipped blueprint's size; prints a markdown table.

1. Scheduler steps/s: headless steps (arrivals, lifecycle, one KAI session per node pool, events, DCGM
   hand-over) of each scenario, 720 steps = 2 simulated hours at 10 s.
2. ``/metrics`` scrape latency p50/p99 over HTTP on loopback (keep-alive, like one Prometheus target)
   after the preemption-storm warm-up, plus one KAI shard and one DCGM target; series per target.

Loopback only, bounded loops, stops by itself. Run: ``python3 bench/bench_runai.py``.
"""

from __future__ import annotations

import datetime
import http.client
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lab.runai.headless import build
from lab.runai.http_server import RunningConstruct
from lab.spec.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, load

STEPS = 720
SCRAPES = 300


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def series(text: str) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def scrape(address: str, path: str, n: int) -> tuple[list[float], str]:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    times: list[float] = []
    body = ""
    for _ in range(n):
        start = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode()
        times.append((time.perf_counter() - start) * 1000)
    conn.close()
    return times, body


def main() -> None:
    blueprint = load(DEFAULT_RUNAI_BLUEPRINT)
    gpus = sum(p.nodes * p.gpus_per_node for p in blueprint.node_pools)
    nodes = sum(p.nodes for p in blueprint.node_pools)
    print(
        f"machine: nproc={os.cpu_count()} python={platform.python_version()} "
        f"date={datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}"
    )
    print(
        f"blueprint: {blueprint.name}, {nodes} nodes, {gpus} GPUs, step {blueprint.clock.step_seconds:g} s\n"
    )
    print("| scenario | steps | wall s | steps/s | workloads seen | events (lines) |")
    print("|---|---|---|---|---|---|")
    for scenario in ("baseline", "quota-exhaustion", "preemption-storm", "gpu-fault"):
        with tempfile.TemporaryDirectory() as tmp:
            run = build(blueprint, scenario, Path(tmp), seed=0)
            start = time.perf_counter()
            run.sim.run(STEPS)
            wall = time.perf_counter() - start
            print(
                f"| {scenario} | {STEPS} | {wall:.2f} | {STEPS / wall:.0f} | {run.sim.arrivals.counter} "
                f"| {len(run.events)} |"
            )
    print()
    with tempfile.TemporaryDirectory() as tmp:
        run = build(blueprint, "preemption-storm", Path(tmp), seed=0, keep_text=False)
        run.sim.run(150)
        construct = RunningConstruct(run.sim, "127.0.0.1:0", wall_seconds_per_step=1e9)
        try:
            print("| target | scrapes | p50 ms | p99 ms | series |")
            print("|---|---|---|---|---|")
            targets = [
                ("/metrics", construct.address),
                ("/kai/default/metrics", construct.address),
                ("dcgm dgx-001 /metrics", construct.dcgm_addresses["dgx-001"]),
            ]
            for label, address in targets:
                path = label.split()[-1]
                times, body = scrape(address, path, SCRAPES)
                print(
                    f"| {label} | {SCRAPES} | {statistics.median(times):.2f} | {percentile(times, 0.99):.2f} "
                    f"| {series(body)} |"
                )
        finally:
            construct.stop()


if __name__ == "__main__":
    main()
