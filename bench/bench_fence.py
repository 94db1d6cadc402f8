"""What the fence costs on a running lab, Slurm or Run:ai: series at the centre against the site's Prometheus,
bytes per second into the centre, the egress gateway's CPU and memory, and the delay from a sample's
evaluation at the site to its copy being readable at the centre.

    python3 bench/bench_fence.py [--lab default] [--seconds 300]
    python3 bench/bench_fence.py --lab runai-default

Series: ``count({__name__=~".+"})`` on each side at one instant. Bytes: the centre container's
received bytes (the engine's network counters) over the window, which is the gateway's remote write
and nothing else while no one queries the centre. CPU and memory: the gateway container's cgroup as
the engine reports it, sampled every 5 s. Delay: every 0.5 s the centre's raw samples of the
cluster's records (``cluster:…`` of a Slurm lab, ``clusterId_…:…`` of a Run:ai lab; ``/api/v1/export``,
no query latency offset) are read; each new (series, timestamp)
is stamped when first seen, its delay is that instant minus its timestamp (the site's evaluation time,
which the gateway keeps), to within the 0.5 s of the poll. Prints markdown for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import docker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import contract, kinds, promql
from lab.attach import running
from lab.bringup import engine

POLL_S = 0.5
STATS_EVERY_S = 5.0
DELAY_MATCH = '{__name__=~"cluster[^:]*:.+"}'


def exported(central: str, since: float) -> dict[tuple[str, int], None]:
    """(series, timestamp in ms) of every raw sample of the cluster's records since ``since``."""
    params = urllib.parse.urlencode({"match[]": DELAY_MATCH, "start": f"{since:.3f}"})
    with urllib.request.urlopen(f"{central}/api/v1/export?{params}", timeout=10) as response:
        lines = response.read().decode().splitlines()
    seen: dict[tuple[str, int], None] = {}
    for line in lines:
        item = json.loads(line)
        key = json.dumps(item["metric"], sort_keys=True)
        for stamp in item["timestamps"]:
            seen[(key, int(stamp))] = None
    return seen


def container_sample(container: docker.models.containers.Container) -> tuple[float, float, int]:
    """(CPU seconds used, memory bytes, network bytes received) of ``container`` now."""
    stats = container.stats(stream=False)
    cpu_s = stats["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
    memory = float(stats["memory_stats"].get("usage", 0))
    received = sum(net["rx_bytes"] for net in stats.get("networks", {}).values())
    return cpu_s, memory, received


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lab", default="default")
    parser.add_argument("--seconds", type=float, default=300)
    args = parser.parse_args()
    blueprint = kinds.load(running.recorded_blueprint(args.lab)).model
    local = f"http://127.0.0.1:{blueprint.ports.prometheus}"
    central = f"http://127.0.0.1:{blueprint.ports.central_metrics}"
    client = engine.require_engine()
    gateway = client.containers.get(contract.container_name(args.lab, "egress"))
    centre = client.containers.get(contract.container_name(args.lab, "central"))

    local_series = promql.query(local, 'count({__name__=~".+"})')[0].value
    central_series = promql.query(central, 'count({__name__=~".+"})')[0].value

    began = time.time()
    known = exported(central, began - 120)
    delays: list[float] = []
    fresh: list[tuple[str, int]] = []
    cpu0, _, _ = container_sample(gateway)
    _, _, rx0 = container_sample(centre)
    memory: list[float] = []
    next_stats = time.monotonic()
    while time.time() - began < args.seconds:
        now = time.time()
        for key in exported(central, began - 120):
            if key not in known:
                known[key] = None
                fresh.append(key)
                delays.append(now - key[1] / 1000)
        if time.monotonic() >= next_stats:
            memory.append(container_sample(gateway)[1])
            next_stats += STATS_EVERY_S
        time.sleep(POLL_S)
    elapsed = time.time() - began
    cpu1, _, _ = container_sample(gateway)
    _, _, rx1 = container_sample(centre)

    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"## The fence on lab '{args.lab}', {today} ({platform.node()}, {elapsed:.0f} s window)\n")
    print("| measurement | figure |")
    print("|---|---:|")
    print(f"| series in the site's Prometheus, one instant | {local_series:,.0f} |")
    print(f"| series at the centre, one instant | {central_series:,.0f} |")
    print(f"| bytes per second into the centre (the gateway's remote write) | {(rx1 - rx0) / elapsed:,.0f} |")
    print(f"| the gateway's CPU, mean over the window | {100 * (cpu1 - cpu0) / elapsed:.2f} % of one core |")
    most = max(memory) / 2**20
    print(f"| the gateway's memory (cgroup usage), max of {len(memory)} samples | {most:.1f} MiB |")
    if delays:
        print(
            f"| site evaluation → readable at the centre, p50 / p99 / max ({len(delays)} samples of "
            f"{len({stamp for _, stamp in fresh})} evaluations) | {statistics.median(delays):.1f} s / "
            f"{percentile(delays, 0.99):.1f} s / {max(delays):.1f} s |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
