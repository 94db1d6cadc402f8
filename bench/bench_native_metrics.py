"""Slurm's own metrics against the pinned exporter on a running Slurm 26.05 lab: slurmctld's time to answer
each metrics endpoint (p50/p99), the exporter's scrape time, and the series each source adds.

    python3 bench/bench_native_metrics.py [--lab slurm-26-05] [--requests 200]

Endpoint times: ``--requests`` sequential GETs of each endpoint with the metrics user's JWT, timed inside
the controller container (Python's urllib, loopback: no engine or network in the figure), in the order
the lab's Prometheus scrapes them. Exporter: Prometheus' own ``scrape_duration_seconds{job="slurm"}``
over the last 10 minutes (its 15 s scrapes: every collector's command, as a site's Prometheus sees it),
p50/p99 by ``quantile_over_time``. Series: ``count({job=…})`` at one instant. Prints markdown for
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import contract, kinds, promql
from lab.bringup import engine, keys
from lab.paths import lab_state_dir

# Run inside the controller: times each GET of every endpoint and prints the per-endpoint list as JSON.
TIMER = """
import json, sys, time, urllib.request
token, count, endpoints = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times = {}
for endpoint in endpoints:
    request = urllib.request.Request(
        "http://localhost:%d/metrics/" % PORT + endpoint, headers={"Authorization": "Bearer " + token}
    )
    spent = []
    for _ in range(count):
        began = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as answer:
            size = len(answer.read())
        spent.append(time.perf_counter() - began)
    times[endpoint] = {"seconds": spent, "bytes": size}
print(json.dumps(times))
"""


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lab", default="slurm-26-05")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    lab = kinds.attach(engine.require_engine(), args.lab)
    controller = lab.controller()
    token = (lab_state_dir(lab.name) / "keys" / keys.METRICS_TOKEN).read_text(encoding="ascii").strip()
    code = TIMER.replace("PORT", str(contract.SLURMCTLD_PORT))
    argv = ["python3", "-c", code, token, str(args.requests), *contract.SLURMCTLD_METRICS_ENDPOINTS]
    result = controller.exec_run(argv)
    if result.exit_code != 0:
        sys.exit(f"timing in the controller failed: {result.output.decode(errors='replace')[-800:]}")
    times = json.loads(result.output)
    prometheus = lab.prometheus_url
    jobs = promql.query(prometheus, "slurm_jobs_running + slurm_jobs_pending")
    gpus = promql.query(prometheus, "slurm_gpus_total")
    print(
        f"lab {lab.name}: {len(lab.blueprint.nodes.names)} nodes, {gpus[0].value:.0f} GPUs, "
        f"{jobs[0].value:.0f} jobs in the queue; {platform.node()}, {datetime.date.today()}\n"
    )
    print("| source | p50 | p99 | max | body |")
    print("|---|---|---|---|---|")
    for endpoint, measured in times.items():
        spent = [s * 1000 for s in measured["seconds"]]
        print(
            f"| slurmctld `/metrics/{endpoint}` ({len(spent)} GETs) | {quantile(spent, 0.5):.2f} ms | "
            f"{quantile(spent, 0.99):.2f} ms | {max(spent):.2f} ms | {measured['bytes']:,} B |"
        )
    scrape = 'scrape_duration_seconds{job="slurm"}[10m]'
    p50 = promql.query(prometheus, f"quantile_over_time(0.5, {scrape})")
    p99 = promql.query(prometheus, f"quantile_over_time(0.99, {scrape})")
    peak = promql.query(prometheus, f"max_over_time({scrape})")
    print(
        f"| exporter scrape (Prometheus, last 10 min) | {p50[0].value * 1000:.0f} ms | "
        f"{p99[0].value * 1000:.0f} ms | {peak[0].value * 1000:.0f} ms | |"
    )
    print("\n| job | series at one instant |")
    print("|---|---|")
    for job in ("slurm", "slurmctld", "dcgm"):
        counted = promql.query(prometheus, f'count({{job="{job}"}})')
        print(f"| `{job}` | {counted[0].value:,.0f} |" if counted else f"| `{job}` | 0 |")


if __name__ == "__main__":
    main()
