"""Benchmark the workload: planning cost, and how fast the submitter gets jobs into Slurm.

1. Plan: 30 days of a 1,024-GPU cluster (the default lab's shape on 128 DGX nodes) with the default's
   workload (Helios Venus, 0.68 GPU jobs per GPU per day) and the superpod's (Helios Saturn, 1.86),
   including the jobs running when the plan begins. Wall time (best and median of 5) and peak Python
   memory (tracemalloc, a separate run).
2. Submission, side by side in one run: ``--jobs`` planned jobs (default 200) submitted one after
   another through each way into the running lab's Slurm, then cancelled:
   * pyslurm: the runner's own client (an agent per user in the controller, over ``docker exec``'s
     pipe; the latency is what the runner waits for, the pipe included);
   * slurmrestd: the runner's other client (per-user JWTs, the v0.0.42 job description; loopback only);
   * sbatch: the same jobs as ``sbatch`` command lines, run one after another inside the controller as
     their users, each timed there (a process start and the RPC, as a user's script pays).
   Reports jobs/s and p50/p99 latency per way, and what that means for the SuperPOD blueprint's
   starting burst (the jobs its plan has running at the start, submitted at once) against Slurm's
   main scheduling cycle (``sched_interval``, 60 s by default). Bounded: ``--jobs`` per way, all
   cancelled.

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
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lab.blueprint.slurm_blueprint import Blueprint, load, parse  # noqa: E402
from lab.paths import DEFAULT_BLUEPRINT  # noqa: E402
from lab.workload.plan import Plan, PlannedJob, lab_limit_minutes, plan  # noqa: E402
from lab.workload.submit import NodeShape  # noqa: E402


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


def _latency_row(way: str, count: int, total_s: float, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return (
        f"| submit through {way}, sequential | {count} jobs | {count / total_s:.1f} jobs/s; latency p50 "
        f"{statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms | - |"
    )


def _through_client(client: Any, jobs: list[PlannedJob], shape: NodeShape) -> tuple[float, list[float]]:
    latencies = []
    ids: list[tuple[str, int]] = []
    start = time.perf_counter()
    for job in jobs:
        description = client.description(job, 3600.0, shape, "/tmp", 2)
        description["name"] = "bench-workload"
        began = time.perf_counter()
        ids.append((job.user, client.submit(job.user, description)))
        latencies.append(time.perf_counter() - began)
    total_s = time.perf_counter() - start
    for user, job_id in ids:
        client.cancel(user, job_id)
    return total_s, latencies


def _through_sbatch(controller: Any, jobs: list[PlannedJob], shape: NodeShape) -> tuple[float, list[float]]:
    """The same jobs as sbatch lines, run as their users inside the controller (one shell per user),
    each timed there with nanoseconds around the sbatch."""
    latencies: list[float] = []
    for user in sorted({job.user for job in jobs}):
        lines = ["set -eu", "printf '#!/bin/bash\\nsleep 1\\n' > /tmp/bench-workload-$(id -un).sh"]
        for job in (job for job in jobs if job.user == user):
            limit = lab_limit_minutes(job.time_limit_s, 3600.0)
            lines.append(
                "s=$(date +%s%N); sbatch --parsable --job-name=bench-workload "
                f"--account={job.account} --partition={job.partition} --qos={job.qos} --time={limit} "
                f"--gpus={job.gpus} --cpus-per-gpu={shape.cpus_per_gpu} --output=/tmp/bench-%j.out "
                "/tmp/bench-workload-$(id -un).sh >/dev/null; e=$(date +%s%N); echo $((e - s))"
            )
        result = controller.exec_run(["bash", "-c", "\n".join(lines)], user=user)
        if result.exit_code != 0:
            raise SystemExit(f"sbatch as {user} failed: {result.output.decode()[-500:]}")
        latencies += [int(line) / 1e9 for line in result.output.decode().split()]
    controller.exec_run(["scancel", "--name", "bench-workload"])
    if len(latencies) != len(jobs):
        raise SystemExit(f"sbatch timed {len(latencies)} of {len(jobs)} jobs")
    return sum(latencies), latencies


def bench_submit(blueprint_path: Path, count: int) -> list[str]:
    import docker

    from lab import kinds
    from lab.progress import Progress
    from lab.workload.submit import connect as connect_rest
    from lab.workload.submitters import connect

    engine = docker.from_env()
    model = load(blueprint_path)
    lab = kinds.attach(engine, model.name)
    rest = connect_rest(lab)
    host = urllib.parse.urlsplit(rest.base_url).hostname
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"slurmrestd is at {rest.base_url}: this benchmark only talks to loopback")
    shape = NodeShape.of(model)
    # Real planned jobs (users, accounts, scripts), made short and single-GPU so the bench measures
    # submission, not scheduling; they are cancelled after each way.
    jobs = [
        replace(job, gpus=1, nodes=1, duration_s=1.0, outcome="completed", failure=None)
        for job in plan(model, hours=24 * 365, seed=2).jobs[:count]
    ]
    if len(jobs) < count:
        raise SystemExit(f"the plan has only {len(jobs)} jobs")
    pyslurm = connect(lab, "pyslurm", Progress())
    for user in {job.user for job in jobs}:  # tokens and agents first: their start is not submission
        rest.credentials(user)
        pyslurm.states(user)
    rows = []
    rates = {}
    for way, client in (("pyslurm", pyslurm), (f"slurmrestd ({rest.base_url})", rest)):
        total_s, latencies = _through_client(client, jobs, shape)
        rates[way.split()[0]] = count / total_s
        rows.append(_latency_row(way, count, total_s, latencies))
    pyslurm.close()
    total_s, latencies = _through_sbatch(lab.controller(), jobs, shape)
    rates["sbatch"] = count / total_s
    rows.append(_latency_row("sbatch (in the controller, a process per job)", count, total_s, latencies))
    burst = starting_burst()
    rows.append(
        f"| SuperPOD starting burst | {burst} jobs | "
        + ", ".join(f"{way} {burst / rate:.2f} s" for way, rate in rates.items())
        + " (Slurm's main scheduling cycle: 60 s) | - |"
    )
    return rows


def starting_burst() -> int:
    """Jobs the SuperPOD blueprint's plan submits at its start: those a cluster has running then."""
    superpod = load(DEFAULT_BLUEPRINT.parent / "superpod.yaml")
    return sum(1 for job in plan(superpod, hours=1, seed=1).jobs if job.warm_s > 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--blueprint", type=Path, default=DEFAULT_BLUEPRINT, help="the running lab's blueprint"
    )
    parser.add_argument("--jobs", type=int, default=200, help="jobs to submit (bounded; default 200)")
    parser.add_argument(
        "--plan-only", action="store_true", help="skip the submission benchmarks (no lab needed)"
    )
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
