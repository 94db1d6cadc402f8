"""Time and memory of `lab churn` over 24 h of the default lab's data.

    python3 bench/bench_churn.py [--hours 24] [--time-scale 1] [--seed 1] [--runs 5] [--keep]

Needs the container engine and the lab's Prometheus image (built by `lab up`); no running lab.

How the 24 hours are made (a day of real scrapes would take a day):

1. Jobs: the default blueprint's workload plan (`lab.workload.plan`) for ``hours × time-scale`` real
   hours, played at the time scale, placed on 4 × 8 GPUs by a first-fit scheduler (jobs above one
   node take whole nodes; a job that does not fit waits). Their sacct lines go to a file.
2. Series: every 15 s, each node's DCGM series exactly as the shim makes them (``EmulatedNode`` with
   its GPU model, the jobs' ``hpc_job`` copies by ``apply_hpc_jobs``), the five series Prometheus
   adds per target (``up``, ``scrape_*``), and Prometheus' own /metrics (job ``prometheus``, one
   scrape of this Prometheus build replayed), written as OpenMetrics with timestamps.
3. TSDB: ``promtool tsdb create-blocks-from openmetrics`` in a container of the lab's Prometheus
   image (Debian prometheus 2.53.3), then ``prometheus`` on those blocks, on a free 127.0.0.1 port.
   Backfilled data carries no staleness markers, so this Prometheus runs with
   ``--query.lookback-delta=15s`` and the scrapes sit 0.5 s off the evaluation grid: a series then
   disappears at the first evaluation after its last sample, exactly as a marker would make it.
4. The measurement: ``lab churn --prometheus … --sacct …`` over the whole window, as a child process
   (``--runs`` times): wall time, its CPU time and peak RSS (``getrusage``), and the CPU time and
   memory of the Prometheus container meanwhile. CPU times are less moved by a busy machine.

The container this script starts (its own name and port, so runs can overlap) is removed at the end
(``--keep`` keeps it and the data).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
from docker.models.containers import Container

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lab.blueprint.slurm_blueprint import load  # noqa: E402
from lab.contract import role_image  # noqa: E402
from lab.dcgm.counters import load_counters  # noqa: E402
from lab.dcgm.hpc import apply_hpc_jobs  # noqa: E402
from lab.dcgm.node import EmulatedNode, NodeConfig  # noqa: E402
from lab.dcgm.rendermetrics import sample_labels  # noqa: E402
from lab.exposition import escape_label_value, parse  # noqa: E402
from lab.paths import DEFAULT_BLUEPRINT  # noqa: E402
from lab.workload.plan import plan  # noqa: E402

SCRAPE_S = 15
PHASE_S = 0.5  # scrapes sit this far after the evaluation grid (see the docstring)
LABEL = "org.aifactory-lab.bench"  # marks the container; each run has its own name and host port
SCRAPE_SERIES = ("scrape_duration_seconds", "scrape_samples_post_metric_relabeling", "scrape_samples_scraped")


@dataclass(frozen=True)
class PlacedJob:
    job_id: str
    start: float
    end: float
    gpus: int
    placement: dict[str, list[int]]  # node → GPU indices


def place(jobs: list[tuple[float, float, int]], nodes: list[str], per_node: int) -> list[PlacedJob]:
    """First-fit: (submit, run seconds, GPUs) → when and where each ran. A job above one node takes
    whole nodes; one that does not fit waits, and later ones that fit may pass it (backfill)."""
    free = {node: set(range(per_node)) for node in nodes}
    arrivals = sorted(range(len(jobs)), key=lambda i: jobs[i][0])
    queue: list[int] = []
    running: list[PlacedJob] = []
    placed: list[PlacedJob] = []
    while arrivals or queue:
        next_arrival = jobs[arrivals[0]][0] if arrivals else math.inf
        ending = min(running, key=lambda j: j.end, default=None)
        if ending is not None and ending.end <= next_arrival:
            now = ending.end
            running.remove(ending)
            for node, gpus in ending.placement.items():
                free[node].update(gpus)
        elif arrivals:
            now = next_arrival
            queue.append(arrivals.pop(0))
        else:
            break  # what is left can never fit
        for index in list(queue):
            _, duration, gpus = jobs[index]
            placement = _fit(free, per_node, gpus)
            if placement:
                for node, taken in placement.items():
                    free[node].difference_update(taken)
                job = PlacedJob(str(1000 + index), now, now + max(duration, 0.001), gpus, placement)
                running.append(job)
                placed.append(job)
                queue.remove(index)
    return placed


def _fit(free: dict[str, set[int]], per_node: int, gpus: int) -> dict[str, list[int]]:
    if gpus > per_node:
        whole = [node for node, idle in free.items() if len(idle) == per_node][: math.ceil(gpus / per_node)]
        return {node: sorted(free[node]) for node in whole} if len(whole) * per_node >= gpus else {}
    node = next((n for n, idle in free.items() if len(idle) >= gpus), None)
    return {node: sorted(free[node])[:gpus]} if node is not None else {}


def sacct_lines(jobs: list[PlacedJob]) -> str:
    return "".join(
        f"{j.job_id}|{math.floor(j.start)}|{math.floor(j.end)}|COMPLETED|"
        f"billing={14 * j.gpus},cpu={14 * j.gpus},gres/gpu={j.gpus},node={len(j.placement)}\n"
        for j in jobs
    )


def openmetrics(
    start: float,
    steps: int,
    nodes: list[str],
    per_node: int,
    jobs: list[PlacedJob],
    itself: list[tuple[str, dict[str, str], float]],
) -> Iterator[str]:
    """The scrapes, one OpenMetrics chunk per scrape round, in time order; the first is one step
    before the window, so the window starts with series that already exist, as on a running lab.
    ``itself`` is Prometheus' own scrape (job ``prometheus``), replayed every round."""
    clock = SimpleNamespace(now=0.0)
    counters = load_counters()
    emulated = {}
    for node in nodes:
        config = NodeConfig(name=node, gpus=per_node)
        emulated[node] = EmulatedNode(config, counters, clock=lambda: clock.now)
    by_start = sorted(jobs, key=lambda j: j.start)
    target = [("job", "prometheus"), ("instance", "localhost:9090")]
    own = [f"{name}{{{_pairs([*labels.items(), *target])}}} {_om(value)}" for name, labels, value in itself]
    for k in range(-1, steps):
        t = start + k * SCRAPE_S + PHASE_S
        clock.now = t
        lines = [f"{line} {t:.3f}\n" for line in own]
        for node, shim in emulated.items():
            mapping: dict[str, list[str]] = {}
            for job in by_start:
                if job.start > t:
                    break
                if t < job.end:
                    for gpu in job.placement.get(node, []):
                        mapping.setdefault(str(gpu), []).append(job.job_id)
            shim.hpc = SimpleNamespace(read=lambda m=mapping: m)
            samples, read, _ = shim.samples()
            target = f'job="dcgm",instance="{node}:9400"'
            first = len(lines)
            for sample in apply_hpc_jobs(samples, read):
                pairs = _pairs(sample_labels(sample))
                lines.append(
                    f"{sample.counter.field_name}{{{pairs},{target}}} {float(sample.value)} {t:.3f}\n"
                )
            count = len(lines) - first
            lines.append(f"up{{{target}}} 1 {t:.3f}\n")
            lines.append(f"scrape_series_added{{{target}}} 0 {t:.3f}\n")
            for name in SCRAPE_SERIES:
                lines.append(f"{name}{{{target}}} {0.01 if 'duration' in name else count} {t:.3f}\n")
        yield "".join(lines)


def _pairs(pairs: list[tuple[str, str]]) -> str:
    return ",".join(f'{name}="{escape_label_value(value)}"' for name, value in pairs)


def _om(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


def own_metrics(container: Container) -> list[tuple[str, dict[str, str], float]]:
    """One scrape of this Prometheus build's own /metrics (a throwaway instance on port 9091)."""
    started = container.exec_run(
        ["sh", "-c", "prometheus --config.file=/bench/prometheus.yml --storage.tsdb.path=/tmp/warm "
         "--web.listen-address=:9091 >/tmp/warm.log 2>&1 & echo $!"]
    )  # fmt: skip
    pid = started.output.decode().strip()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            result = container.exec_run(["curl", "-sf", "http://127.0.0.1:9091/metrics"])
            if result.exit_code == 0:
                families = parse(result.output.decode())
                return [(s.name, s.labels, s.value) for f in families.values() for s in f.samples]
            time.sleep(0.5)
        raise SystemExit("the throwaway Prometheus did not answer on :9091")
    finally:
        container.exec_run(["kill", pid])


def generate(
    path: Path,
    start: float,
    steps: int,
    jobs: list[PlacedJob],
    itself: list[tuple[str, dict[str, str], float]],
) -> tuple[int, float, float]:
    """Write the OpenMetrics file; (samples, seconds taken, GB)."""
    blueprint = load(DEFAULT_BLUEPRINT)
    began = time.perf_counter()
    samples = 0
    with path.open("w") as out:
        for chunk in openmetrics(
            start, steps, blueprint.nodes.names, blueprint.nodes.shape.gpus, jobs, itself
        ):
            samples += chunk.count("\n")
            out.write(chunk)
        out.write("# EOF\n")
    return samples, time.perf_counter() - began, path.stat().st_size / 1e9


def host_url(container: Container) -> str:
    """The 127.0.0.1 address the engine picked for the container's port 9090."""
    container.reload()
    binding = container.attrs["NetworkSettings"]["Ports"]["9090/tcp"][0]
    return f"http://127.0.0.1:{binding['HostPort']}"


def backfill(container: Container) -> float:
    """promtool's backfill into /bench/tsdb, then Prometheus on it; seconds the backfill took."""
    began = time.perf_counter()
    result = container.exec_run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
         "/bench/data.om", "/bench/tsdb"]
    )  # fmt: skip
    if result.exit_code != 0:
        raise SystemExit(f"promtool failed: {result.output.decode()[-2000:]}")
    taken = time.perf_counter() - began
    container.exec_run(
        ["prometheus", "--config.file=/bench/prometheus.yml", "--storage.tsdb.path=/bench/tsdb",
         "--storage.tsdb.retention.time=3650d", "--query.lookback-delta=15s", "--web.listen-address=:9090"],
        detach=True,
    )  # fmt: skip
    wait_ready(host_url(container), 120)
    return taken


@dataclass(frozen=True)
class Measured:
    wall_s: list[float]
    cpu_s: list[float]  # user + system time of the `lab churn` process
    prometheus_cpu_s: list[float]  # CPU time the Prometheus container spent meanwhile
    peak_rss_mb: float
    prometheus_mb: float
    report: dict[str, Any]


def measure(
    container: Container, work: Path, start: float, end: float, time_scale: float, runs: int
) -> Measured:
    """`lab churn` as a child, ``runs`` times: wall and CPU time, peak RSS, Prometheus' CPU and memory.

    CPU times are given beside wall times because a shared machine's load moves the wall times.
    """
    argv = [
        sys.executable, "-c", "from lab.commands.churn import app; app()",
        "--prometheus", host_url(container), "--sacct", str(work / "sacct.txt"), "--lab", "bench",
        "--start", str(start), "--end", str(end), "--step", f"{SCRAPE_S}s",
        "--time-scale", f"{time_scale:g}", "--out", str(work / "report"), "--quiet",
    ]  # fmt: skip
    wall, cpu, server = [], [], []
    for _ in range(runs):
        before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), _container_cpu_s(container)
        began = time.perf_counter()
        run = subprocess.run(argv, capture_output=True, text=True, check=False)
        wall.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        server.append(_container_cpu_s(container) - server_before)
        if run.returncode not in (0, 1):
            raise SystemExit(f"lab churn failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    prometheus_mb = container.stats(stream=False).get("memory_stats", {}).get("usage", 0) / 1e6
    report: dict[str, Any] = json.loads((work / "report" / "churn.json").read_text())
    return Measured(wall, cpu, server, peak_rss_mb, prometheus_mb, report)


def _container_cpu_s(container: Container) -> float:
    stats = container.stats(stream=False)
    return float(stats.get("cpu_stats", {}).get("cpu_usage", {}).get("total_usage", 0)) / 1e9


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    system = f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    return f"{cpu}, {os.cpu_count()} CPUs, {memory_gb:.0f} GB RAM, {system}"


def wait_ready(url: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"Prometheus at {url} not ready after {timeout_s} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, default=24.0, help="lab hours of data")
    parser.add_argument(
        "--time-scale", type=float, default=1.0, help="workload compression (real s per lab s)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5, help="runs of `lab churn` measured")
    parser.add_argument("--keep", action="store_true", help="keep the container and the data")
    args = parser.parse_args()

    blueprint = load(DEFAULT_BLUEPRINT)
    nodes, per_node = blueprint.nodes.names, blueprint.nodes.shape.gpus
    steps = int(args.hours * 3600 / SCRAPE_S)
    end = math.floor(time.time() / SCRAPE_S) * SCRAPE_S - 3600  # an hour back: the data is history
    start = end - steps * SCRAPE_S
    planned = plan(blueprint, args.hours * args.time_scale, args.seed).jobs
    jobs = place(
        [(start + j.submit_s / args.time_scale, j.duration_s / args.time_scale, j.gpus) for j in planned],
        nodes,
        per_node,
    )
    work = Path(tempfile.mkdtemp(prefix="bench-churn-"))
    work.chmod(0o755)
    (work / "sacct.txt").write_text(sacct_lines(jobs))
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    client = docker.from_env()
    container = client.containers.run(
        role_image("prometheus"),
        command=["sleep", "infinity"],
        name=f"bench-churn-prometheus-{os.getpid()}",
        labels={LABEL: "bench_churn"},
        detach=True,
        init=True,
        ports={"9090/tcp": ("127.0.0.1", None)},
        volumes={str(work): {"bind": "/bench", "mode": "rw"}},
    )
    try:
        samples, generated_s, size_gb = generate(work / "data.om", start, steps, jobs, own_metrics(container))
        print(
            f"{len(jobs)} jobs, {samples:,} samples ({size_gb:.2f} GB) in {generated_s:.0f} s",
            file=sys.stderr,
        )
        backfill_s = backfill(container)
        (work / "data.om").unlink()
        measured = measure(container, work, start, end, args.time_scale, args.runs)
    finally:
        if args.keep:
            print(f"kept container {container.name} and {work}", file=sys.stderr)
        else:
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
            shutil.rmtree(work, ignore_errors=True)

    report = measured.report
    dcgm = next(row for row in report["constructs"] if row["construct"] == "dcgm")
    peaks = ", ".join(f"{row['construct']} {row['peak_active']}" for row in report["constructs"])
    print(f"machine: {machine()}; load average during the runs {os.getloadavg()[0]:.1f}")
    print(f"data: {args.hours:g} h of lab time at {SCRAPE_S} s, default blueprint (4 × 8 GPUs), time scale "
          f"{args.time_scale:g} ({len(jobs)} jobs), {samples:,} samples; generated in {generated_s:.0f} s, "
          f"backfilled in {backfill_s:.0f} s")  # fmt: skip
    print()
    columns = [
        "window",
        "evaluations",
        "queries",
        "wall (median, min–max)",
        "CPU `lab churn`",
        "CPU Prometheus",
    ]
    print(f"| {' | '.join(columns)} | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    wall = sorted(measured.wall_s)
    print(
        f"| {args.hours:g} h | {report['window']['steps']:,} | {report['queries']} | "
        f"{statistics.median(wall):.1f} s ({wall[0]:.1f}–{wall[-1]:.1f}) | "
        f"{statistics.median(measured.cpu_s):.1f} s | {statistics.median(measured.prometheus_cpu_s):.1f} s | "
        f"{measured.peak_rss_mb:.0f} MB (Prometheus {measured.prometheus_mb:.0f} MB) |"
    )
    print()
    print(f"report: peak series {peaks}; dcgm created {dcgm['created']:,}, ended {dcgm['ended']:,}; "
          f"bound holds: {report['bound']['holds']}, peak distinct {report['bound']['peak_distinct']}, "
          f"jobs seen {len(report['hpc_job']['jobs'])}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
