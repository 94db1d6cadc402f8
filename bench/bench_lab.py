"""Lab bring-up benchmarks: cold/warm `lab up`, `lab down`, idle memory, and a job burst.

    python bench/bench_lab.py up --blueprint blueprints/default.yaml [--cold]
    python bench/bench_lab.py down --lab default
    python bench/bench_lab.py memory --lab default
    python bench/bench_lab.py burst --lab superpod --jobs 1000 --partition batch --user user001

Prints one JSON line per measurement; BENCHMARKS.md records the results with the machine and date.
Only loopback and the lab's own containers receive traffic; every wait has a deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime

import docker

from lab import contract
from lab.bringup import containers, images

DEADLINE_S = 900


def machine() -> dict[str, object]:
    return {
        "nproc": os.cpu_count(),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def emit(name: str, **values: object) -> None:
    print(json.dumps({"bench": name, **values, "machine": machine()}), flush=True)


def lab(*args: str) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "lab", *args], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - began


def bench_up(blueprint: str, cold: bool, hosts: str = "container") -> None:
    client = docker.from_env()
    if cold:
        images.remove_all(client)
    # Cold as on a fresh machine: no lab image and no layer cache (--rebuild builds with nocache).
    extra = ["--rebuild"] if cold else []
    seconds = lab("up", "--blueprint", blueprint, "--hosts", hosts, "-q", "--no-workload", *extra)
    emit("lab-up", blueprint=blueprint, hosts=hosts, cold=cold, seconds=round(seconds, 1))


def bench_down(name: str) -> None:
    emit("lab-down", lab=name, seconds=round(lab("down", "--lab", name), 1))


def bench_memory(name: str) -> None:
    client = docker.from_env()
    usage: dict[str, float] = {}
    for container in containers.lab_containers(client, name):
        stats = container.stats(stream=False)
        memory = stats["memory_stats"]
        cache = memory.get("stats", {}).get("inactive_file", 0)
        usage[container.labels[contract.LABEL_HOST]] = (memory["usage"] - cache) / 2**20
    nodes = [v for k, v in usage.items() if k not in ("controller", "dbd", "restd", "prometheus")]
    emit(
        "idle-memory",
        lab=name,
        total_mib=round(sum(usage.values())),
        per_node_container_mib=round(sum(nodes) / max(1, len(nodes)), 1),
        by_container_mib={k: round(v) for k, v in sorted(usage.items())},
    )


def bench_burst(name: str, jobs: int, partition: str, user: str, seconds: int) -> None:
    client = docker.from_env()
    controller = containers.find_container(client, name, "controller")
    assert controller is not None, f"lab {name} has no controller"
    submit = (
        f"for i in $(seq {jobs}); do sbatch --quiet --partition={partition} --gres=gpu:1 --time=30 "
        f"--output=/dev/null --wrap 'sleep {seconds}' || exit 1; done"
    )
    began = time.monotonic()
    result = controller.exec_run(["su", "-", user, "-c", submit])
    submitted = time.monotonic() - began
    assert result.exit_code == 0, result.output.decode()[-500:]
    running = 0
    while time.monotonic() - began < DEADLINE_S:
        out = controller.exec_run(["squeue", "--noheader", "--states=RUNNING", "--format=%i"]).output.decode()
        running = len(out.split())
        if running >= jobs:
            break
        time.sleep(1)
    all_started = time.monotonic() - began
    bench_memory(name)
    controller.exec_run(["scancel", "--user", user])
    emit(
        "job-burst",
        lab=name,
        jobs=jobs,
        submit_seconds=round(submitted, 1),
        submit_rate_per_s=round(jobs / submitted, 1),
        all_running_after_s=round(all_started, 1),
        running=running,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    up = sub.add_parser("up")
    up.add_argument("--blueprint", default="blueprints/default.yaml")
    up.add_argument("--cold", action="store_true", help="remove every lab image first")
    up.add_argument(
        "--hosts", default="container", choices=("container", "systemd"), help="as `lab up --hosts`"
    )
    for name in ("down", "memory"):
        sub.add_parser(name).add_argument("--lab", default="default")
    burst = sub.add_parser("burst")
    burst.add_argument("--lab", default="superpod")
    burst.add_argument("--jobs", type=int, default=1000)
    burst.add_argument("--partition", default="batch")
    burst.add_argument("--user", default="user001")
    burst.add_argument("--seconds", type=int, default=600, help="how long each job sleeps")
    args = parser.parse_args()
    if args.what == "up":
        bench_up(args.blueprint, args.cold, args.hosts)
    elif args.what == "down":
        bench_down(args.lab)
    elif args.what == "memory":
        bench_memory(args.lab)
    else:
        bench_burst(args.lab, args.jobs, args.partition, args.user, args.seconds)


if __name__ == "__main__":
    main()
