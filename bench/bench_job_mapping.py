"""Wall time of prolog/dcgm-job-mapping against the naive bash pattern, per job on 8 GPUs.

    python3 bench/bench_job_mapping.py [--runs 300] [--check]

Each run is one job: the prolog, then the epilog, each spawned the way slurmd does it (fork +
exec of the path, a minimal environment, wait for the exit status), timed from spawn to exit.
Both variants work on their own directory whose 8 GPU files already hold three other jobs' ids,
as on a busy node, and alternate run by run so neither gets a warmer cache. The table is
markdown, for BENCHMARKS.md. Goals: p99 <= 25 ms per script; prolog+epilog <= 3x the naive one.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = REPO / "prolog" / "dcgm-job-mapping"
OURS_EPILOG = REPO / "epilog" / "dcgm-job-mapping"
NAIVE = REPO / "bench" / "job-mapping-naive.sh"
GPUS = ",".join(str(gpu) for gpu in range(8))
BACKGROUND_JOBS = ("901", "902", "903")
WARMUP = 20
P99_GOAL_MS = 25.0
RATIO_GOAL = 3.0


def spawn(argv: list[str], env: dict[str, str]) -> float:
    """Milliseconds from posix_spawn to the child's exit; a non-zero exit aborts the bench."""
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv} exited with status {status}")
    return elapsed


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class Variant:
    """One implementation, its own mapping directory and its timings."""

    def __init__(self, name: str, prolog: list[str], epilog: list[str], work: Path) -> None:
        self.name, self.prolog, self.epilog = name, prolog, epilog
        work = work / str(len(list(work.iterdir())))  # one private tree per variant
        self.dir = work / "job-mapping"
        self.dir.mkdir(parents=True)
        for gpu in GPUS.split(","):
            (self.dir / gpu).write_text("".join(f"{job}\n" for job in BACKGROUND_JOBS))
        conf = work / "dcgm-job-mapping.conf"
        conf.write_text("")
        self.base_env = {
            "SLURMD_NODENAME": "dgx-001",
            "SLURM_JOB_GPUS": GPUS,
            "DCGM_HPC_JOB_MAPPING_DIR": str(self.dir),
            "DCGM_JOB_MAPPING_LOG": str(work / "dcgm-job-mapping.log"),
            "DCGM_JOB_MAPPING_CONF": str(conf),
        }
        self.times: dict[str, list[float]] = {"prolog": [], "epilog": [], "prolog+epilog": []}

    def job(self, job_id: int, record: bool) -> None:
        env = {**self.base_env, "SLURM_JOB_ID": str(job_id)}
        prolog = spawn(self.prolog, {**env, "SLURM_SCRIPT_CONTEXT": "prolog_slurmd"})
        epilog = spawn(self.epilog, {**env, "SLURM_SCRIPT_CONTEXT": "epilog_slurmd"})
        if record:
            self.times["prolog"].append(prolog)
            self.times["epilog"].append(epilog)
            self.times["prolog+epilog"].append(prolog + epilog)

    def check_state(self) -> None:
        """Every job left again: only the background ids remain, in order."""
        want = "".join(f"{job}\n" for job in BACKGROUND_JOBS)
        for gpu in GPUS.split(","):
            got = (self.dir / gpu).read_text()
            if got != want:
                raise SystemExit(f"{self.name}: gpu {gpu} holds {got!r} after the bench")


def machine() -> str:
    interpreter = subprocess.run(
        ["/usr/bin/python3", "-V"], capture_output=True, text=True, check=True
    ).stdout.strip()
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return (
        f"nproc={os.cpu_count()}, {interpreter} (/usr/bin/python3, the scripts' interpreter), "
        f"{platform.system()} {platform.release()}, {now}, load average before the run {load}"
    )


def table(variants: list[Variant], runs: int, host: str) -> str:
    rows = [
        f"Machine: {host}",
        f"Runs: {runs} jobs x 8 GPUs each, after {WARMUP} warm-up jobs; spawn-to-exit wall time.",
        "",
        "| script | step | p50 ms | p99 ms | mean ms |",
        "|---|---|---:|---:|---:|",
    ]
    for variant in variants:
        for step, samples in variant.times.items():
            rows.append(
                f"| {variant.name} | {step} | {percentile(samples, 0.5):.2f} | "
                f"{percentile(samples, 0.99):.2f} | {statistics.fmean(samples):.2f} |"
            )
    return "\n".join(rows)


def verdict(naive: Variant, ours: Variant) -> tuple[str, bool]:
    pair = "prolog+epilog"
    ratio_p50 = percentile(ours.times[pair], 0.5) / percentile(naive.times[pair], 0.5)
    ratio_mean = statistics.fmean(ours.times[pair]) / statistics.fmean(naive.times[pair])
    worst_p99 = max(percentile(ours.times[step], 0.99) for step in ("prolog", "epilog"))
    ok_ratio = max(ratio_p50, ratio_mean) <= RATIO_GOAL
    ok_p99 = worst_p99 <= P99_GOAL_MS
    lines = [
        "",
        f"- prolog+epilog, ours / naive: {ratio_p50:.2f}x at p50, {ratio_mean:.2f}x on the mean "
        f"(goal <= {RATIO_GOAL:g}x): {'PASS' if ok_ratio else 'FAIL'}",
        f"- worst p99 of one script (ours): {worst_p99:.2f} ms (goal <= {P99_GOAL_MS:g} ms): "
        f"{'PASS' if ok_p99 else 'FAIL'}",
    ]
    return "\n".join(lines), ok_ratio and ok_p99


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="timed jobs per variant (>= 300)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a goal is missed")
    args = parser.parse_args()
    host = machine()
    with tempfile.TemporaryDirectory(prefix="bench-job-mapping-") as tmp:
        work = Path(tmp)
        naive = Variant("naive bash", [str(NAIVE), "prolog"], [str(NAIVE), "epilog"], work)
        ours = Variant("dcgm-job-mapping", [str(OURS)], [str(OURS_EPILOG)], work)
        for run in range(WARMUP + args.runs):
            order = (naive, ours) if run % 2 else (ours, naive)
            for variant in order:
                variant.job(10_000 + run, record=run >= WARMUP)
        naive.check_state()
        ours.check_state()
    summary, ok = verdict(naive, ours)
    print(table([naive, ours], args.runs, host) + "\n" + summary)
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
