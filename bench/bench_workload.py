"""Benchmark the workload: planning cost, and how fast the submitter gets jobs into Slurm.

1. Plan: 30 days of a 1,024-GPU cluster (the default lab's shape on 128 DGX nodes) with the default's
   workload (Helios Venus, 0.68 GPU jobs per GPU per day) and the superpod's (Helios Saturn, 1.86),
   including the jobs running when the plan begins. Wall time (best and median of 5) and peak Python
   memory (tracemalloc, a separate run).
2. Submission through slurmrestd: ``--jobs`` planned jobs (default 200) submitted one after another by
   the runner's own client (per-user JWTs, the v0.0.42 job description with its script), then cancelled
   the same way. Reports jobs/s and per-request latency. Loopback only: the lab's slurmrestd must
   listen on 127.0.0.1. Bounded: it stops after ``--jobs`` submissions and cancels them all.

Run: ``python3 bench/bench_workload.py`` (``--plan-only`` without a lab).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
import urllib.parse
from dataclasses import replace
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lab.paths import DEFAULT_BLUEPRINT  # noqa: E402
from lab.spec.slurm_blueprint import Blueprint, load, parse  # noqa: E402
from lab.workload.plan import Plan, plan  # noqa: E402
from lab.workload.submit import NodeShape, job_description  # noqa: E402


def machine() -> dict[str, str]:
    cpu = "unknown"
    memory = "unknown"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
        kib = int(
            next(
                line.split()[1]
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")
            )
        )
        memory = f"{kib / 1024**2:.1f} GiB"
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": memory,
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def cluster_of(gpus: int, workload_of: str) -> Blueprint:
    """The default lab's shape at ``gpus`` GPUs, with the workload of a shipped blueprint."""
    data = yaml.safe_load(DEFAULT_BLUEPRINT.read_text())
    data["nodes"]["count"] = gpus // data["nodes"]["shape"]["gpus"]
    workload = yaml.safe_load((DEFAULT_BLUEPRINT.parent / f"{workload_of}.yaml").read_text())["workload"]
    data["workload"] = {**data["workload"], "trace": workload["trace"]}
    return parse(data)


def bench_plan(workload_of: str) -> list[str]:
    blueprint = cluster_of(1024, workload_of)
    assert blueprint.workload is not None
    trace = blueprint.workload.trace
    label, rate = trace.cluster, round(trace.gpu_jobs_per_gpu_per_day, 3)
    timings = []
    result: Plan | None = None
    for _ in range(5):
        start = time.perf_counter()
        result = plan(blueprint, hours=30 * 24, seed=1)
        timings.append(time.perf_counter() - start)
    assert result is not None
    tracemalloc.start()
    plan(blueprint, hours=30 * 24, seed=1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    jobs = len(result.jobs)
    return [
        f"| plan, 30 days, 1,024 GPUs, {label} ({rate} GPU jobs/GPU/day) | {jobs:,} jobs | "
        f"best {min(timings):.3f} s, median {statistics.median(timings):.3f} s "
        f"({jobs / min(timings):,.0f} jobs/s) | peak {peak / 1024**2:.1f} MiB |"
    ]


def bench_submit(blueprint_path: Path, count: int) -> list[str]:
    import docker

    from lab import kinds
    from lab.workload.submit import connect

    client = docker.from_env()
    rest = connect(kinds.attach(client, load(blueprint_path).name))
    host = urllib.parse.urlsplit(rest.base_url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"slurmrestd is at {rest.base_url}: this benchmark only talks to loopback")
    model = load(blueprint_path)
    shape = NodeShape.of(model)
    # Real planned jobs (users, accounts, scripts), made short and single-GPU so the bench measures
    # submission, not scheduling; they are cancelled at the end.
    jobs = [
        replace(job, gpus=1, nodes=1, duration_s=1.0, outcome="completed", failure=None)
        for job in plan(model, hours=24 * 365, seed=2).jobs[:count]
    ]
    if len(jobs) < count:
        raise SystemExit(f"the plan has only {len(jobs)} jobs")
    for user in {job.user for job in jobs}:  # tokens first: their issue time is not submission time
        rest.credentials(user)
    latencies = []
    ids: list[tuple[str, int]] = []
    start = time.perf_counter()
    for job in jobs:
        description = job_description(job, 3600.0, shape, "/tmp", 2)
        description["name"] = "bench-workload"
        began = time.perf_counter()
        ids.append((job.user, rest.submit(job.user, description)))
        latencies.append(time.perf_counter() - began)
    submit_s = time.perf_counter() - start
    cancel_start = time.perf_counter()
    for user, job_id in ids:
        rest.cancel(user, job_id)
    cancel_s = time.perf_counter() - cancel_start
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return [
        f"| submit through slurmrestd ({rest.base_url}), sequential | {count} jobs | "
        f"{count / submit_s:.1f} jobs/s; latency p50 {statistics.median(latencies) * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms | - |",
        f"| cancel through slurmrestd (DELETE), sequential | {count} jobs | {count / cancel_s:.1f} jobs/s "
        "| - |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--blueprint", type=Path, default=DEFAULT_BLUEPRINT, help="the running lab's blueprint"
    )
    parser.add_argument("--jobs", type=int, default=200, help="jobs to submit (bounded; default 200)")
    parser.add_argument("--plan-only", action="store_true", help="skip the slurmrestd benchmark")
    args = parser.parse_args()
    facts = machine()
    print(f"machine: {facts['cpu']}, {facts['cores']} cores, {facts['memory']}; Python {facts['python']}")
    print(f"os: {facts['os']}")
    print()
    print("| benchmark | size | time / rate | memory |")
    print("|---|---|---|---|")
    rows = bench_plan("default") + bench_plan("superpod")
    if not args.plan_only:
        rows += bench_submit(args.blueprint, args.jobs)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
