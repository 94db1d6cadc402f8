"""Benchmark the DCGM shim over real HTTP on loopback; prints a markdown table.

1. One node, 8 GPUs, 2 jobs on every GPU (16 hpc_job values, 400 series): sequential scrapes on a
   keep-alive connection, like one Prometheus target. Goal: p99 <= 10 ms.
2. SuperPOD: 256 nodes x 8 GPUs (2,048 GPUs) served by 8 shim processes of 32 nodes each, the way
   rack containers serve their slurmd nodes. Every node is scraped once per 15 s cycle, compressed
   (default 10x), targets spread evenly over the cycle as Prometheus spreads them. Per node: GPUs
   0-5 run one job, GPU 6 is shared by two, GPU 7 is idle. Goal: p99 per node scrape <= 20 ms.
   Reports RSS of every shim process.

Loopback only, bounded loops, stops by itself. Run: ``python3 bench/bench_dcgm_shim.py``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import http.client
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LISTENING = re.compile(r'msg="Listening on" address=(\S+) node=(\S+)')
REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def write_mapping(root: Path, node: str, jobs_by_gpu: dict[int, list[str]]) -> None:
    directory = root / node
    directory.mkdir(parents=True, exist_ok=True)
    for gpu, jobs in jobs_by_gpu.items():
        (directory / str(gpu)).write_text("".join(f"{job}\n" for job in jobs))


def start_shim(nodes: list[str], args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "lab.dcgm", *args]
    for node in nodes:
        argv += ["--node", f"{node}:127.0.0.1:0"]
    with log_path.open("wb") as log:
        return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log)


def wait_addresses(logs: list[Path], expected: int, timeout: float = 120.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = {}
        for log in logs:
            for address, node in LISTENING.findall(log.read_text()):
                found[node] = address
        if len(found) >= expected:
            return found
        time.sleep(0.05)  # polling a log file for start-up; not a test synchronisation
    raise SystemExit(f"shims did not report {expected} listen addresses within {timeout:.0f}s")


def connect(address: str) -> http.client.HTTPConnection:
    host, _, port = address.rpartition(":")
    return http.client.HTTPConnection(host, int(port), timeout=30)


def scrape(connection: http.client.HTTPConnection) -> tuple[float, int]:
    start = time.perf_counter()
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - start
    if response.status != 200:
        raise SystemExit(f"scrape failed: HTTP {response.status}")
    return elapsed, sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat (load-independent cost)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def single_node(tmp: Path, scrapes: int) -> dict[str, str]:
    write_mapping(tmp / "single", "bench-node", {g: [f"{1000 + g}", f"{2000 + g}"] for g in range(8)})
    log = tmp / "single.log"
    proc = start_shim(["bench-node"], ["--hpc-job-mapping-dir", f"{tmp / 'single'}/%n"], log)
    try:
        address = wait_addresses([log], 1)["bench-node"]
        connection = connect(address)
        for _ in range(20):
            scrape(connection)
        timings = []
        series = 0
        cpu_before = cpu_seconds(proc.pid)
        for _ in range(scrapes):
            elapsed, series = scrape(connection)
            timings.append(elapsed * 1000)
        cpu_ms = (cpu_seconds(proc.pid) - cpu_before) * 1000 / scrapes
        connection.close()
        return {
            "scrapes": str(scrapes),
            "series per scrape": str(series),
            "p50 ms": f"{statistics.median(timings):.2f}",
            "p99 ms": f"{percentile(timings, 0.99):.2f}",
            "max ms": f"{max(timings):.2f}",
            "shim CPU ms per scrape": f"{cpu_ms:.2f}",
            "RSS MiB": f"{rss_mib(proc.pid):.1f}",
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def superpod(tmp: Path, processes: int, per_process: int, cycles: int, compression: float) -> dict[str, str]:
    racks = [[f"r{r:02d}n{n:02d}" for n in range(per_process)] for r in range(processes)]
    layout = {g: [f"job-{g}"] for g in range(6)} | {6: ["job-6a", "job-6b"]}
    for rack in racks:
        for node in rack:
            write_mapping(tmp / "pod", node, {g: [f"{node}-{j}" for j in jobs] for g, jobs in layout.items()})
    logs = [tmp / f"rack{r}.log" for r in range(processes)]
    procs = [
        start_shim(rack, ["--hpc-job-mapping-dir", f"{tmp / 'pod'}/%n"], log)
        for rack, log in zip(racks, logs, strict=True)
    ]
    try:
        addresses = wait_addresses(logs, processes * per_process)
        targets = sorted(addresses)
        connections = {node: connect(addresses[node]) for node in targets}
        interval = 15.0 / compression
        timings: list[float] = []
        series_per_cycle = 0
        cpu_before = 0.0
        with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
            for cycle in range(cycles + 1):  # cycle 0 warms up (first scrape, connections)
                start = time.monotonic()

                def paced(index: int, node: str, start: float = start) -> tuple[float, int]:
                    delay = start + interval * index / len(targets) - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)  # Prometheus-like spreading of targets over the interval
                    return scrape(connections[node])

                results = list(pool.map(paced, range(len(targets)), targets))
                if cycle == 0:
                    cpu_before = sum(cpu_seconds(proc.pid) for proc in procs)
                    continue
                timings += [elapsed * 1000 for elapsed, _ in results]
                series_per_cycle = sum(count for _, count in results)
                remaining = start + interval - time.monotonic()
                if remaining > 0:
                    time.sleep(remaining)
        rss = [rss_mib(proc.pid) for proc in procs]
        cpu_ms = (sum(cpu_seconds(proc.pid) for proc in procs) - cpu_before) * 1000 / len(timings)
        for connection in connections.values():
            connection.close()
        return {
            "nodes x GPUs": f"{len(targets)} x 8 = {len(targets) * 8}",
            "processes x nodes": f"{processes} x {per_process}",
            "cycles (15 s compressed)": f"{cycles} x {interval:.2f} s ({compression:g}x) + 1 warm-up",
            "scrapes": str(len(timings)),
            "series per cycle": str(series_per_cycle),
            "p50 ms": f"{statistics.median(timings):.2f}",
            "p99 ms": f"{percentile(timings, 0.99):.2f}",
            "max ms": f"{max(timings):.2f}",
            "shim CPU ms per node scrape": f"{cpu_ms:.2f}",
            "RSS MiB per process (max)": f"{max(rss):.1f}",
            "RSS MiB total": f"{sum(rss):.1f}",
        }
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def table(title: str, rows: dict[str, str]) -> str:
    lines = [f"### {title}", "", "| measure | value |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in rows.items()]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=500, help="single-node scrapes (default 500)")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--nodes-per-process", type=int, default=32)
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--compression", type=float, default=10.0)
    args = parser.parse_args()
    facts = {
        "date (UTC)": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M"),
        "nproc": str(os.cpu_count()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    with tempfile.TemporaryDirectory(prefix="dcgm-bench-") as tmp:
        single = single_node(Path(tmp), args.scrapes)
        pod = superpod(Path(tmp), args.processes, args.nodes_per_process, args.cycles, args.compression)
    print(table("Machine", facts))
    print()
    print(table("One node, 8 GPUs, 2 jobs per GPU (goal p99 <= 10 ms)", single))
    print()
    print(table("SuperPOD, one scrape per node per cycle (goal p99 <= 20 ms)", pod))
    return 0


if __name__ == "__main__":
    sys.exit(main())
