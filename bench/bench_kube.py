"""Scheduling throughput of the real KAI Scheduler at SuperPOD size, and the memory it all takes.

    python3 bench/bench_kube.py [--nodes 256] [--pods 2048]

A Run:ai lab from the shipped blueprint with its default pool grown to ``--nodes - 8`` kwok DGX H100
nodes (the SuperPOD blueprint's 256 nodes, 2,048 GPUs, with the 8-node inference pool), baseline
scenario. It then submits ``--pods`` one-GPU preemptible training pods at once (Jobs of 8 pods in
team-a's queue of pool default, which may borrow every free GPU) and times, from the first Job's
creation, until the last pod is bound (``spec.nodeName`` set by KAI's binder): every pod, or as many
as the pool holds. Prints bring-up seconds, pods bound per second
and the lab container's memory (docker stats) idle and after the burst; takes the lab down at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from lab.blueprint.runai_blueprint import parse
from lab.contract import container_name
from lab.kube import manifests
from lab.kube.api import Client
from lab.paths import BLUEPRINTS_DIR, lab_state_dir
from lab.runai import Arrivals

PODS_PER_JOB = 8


def _lab(*args: str) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "lab", *args], check=True, capture_output=True, text=True)
    return time.monotonic() - began


def _memory_mib(container: str) -> float:
    out = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{json .}}", container],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    used = json.loads(out)["MemUsage"].split("/")[0].strip()
    number, unit = float(used[:-3]), used[-3:]
    return number * {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}[unit]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--pods", type=int, default=2048)
    args = parser.parse_args()
    data = yaml.safe_load((BLUEPRINTS_DIR / "runai.yaml").read_text())
    data["node_pools"][0]["nodes"] = args.nodes - data["node_pools"][1]["nodes"]
    bp = parse(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runai-superpod.yaml"
        path.write_text(yaml.safe_dump(data))
        _lab("down", "--lab", bp.name, "--purge")
        try:
            up_s = _lab("up", "--blueprint", str(path), "-q")
            container = container_name(bp.name, "runai")
            idle = _memory_mib(container)
            client = Client(lab_state_dir(bp.name) / "kubeconfig")
            arrivals = Arrivals(bp, random.Random(7))
            wclass = bp.workload_class("train")
            began = time.monotonic()
            for _ in range(args.pods // PODS_PER_JOB):
                w = arrivals.make(
                    wclass, 0.0, project="team-a", gpus_per_pod=1, run_seconds=86400.0, will_fail=False
                )
                w.name = f"bench-{w.name}"
                w.pods_count = PODS_PER_JOB
                client.create(manifests.job(bp, w, 1.0))
            submitted_s = time.monotonic() - began
            # Until every pod is bound, or the count stops growing for 30 s (the pool is full: the
            # default pool has 8 GPUs per node, and baseline work holds some).
            bound, last_growth, elapsed = 0, time.monotonic(), 0.0
            while bound < args.pods and time.monotonic() - last_growth < 30:
                pods = client.list("Pod", "runai-team-a")
                now_bound = sum(
                    1
                    for p in pods
                    if p["metadata"]["name"].startswith("bench-")
                    and p["spec"].get("nodeName")
                    and not p["metadata"].get("deletionTimestamp")
                )
                if now_bound > bound:
                    bound, last_growth = now_bound, time.monotonic()
                    elapsed = last_growth - began
                time.sleep(1.0)
            busy = _memory_mib(container)
            print(
                json.dumps(
                    {
                        "nodes": args.nodes,
                        "gpus": sum(p.nodes * p.gpus_per_node for p in bp.node_pools),
                        "bring_up_s": round(up_s, 1),
                        "submit_s": round(submitted_s, 1),
                        "pods_bound": bound,
                        "bind_s": round(elapsed, 1),
                        "pods_bound_per_s": round(bound / elapsed, 1),
                        "memory_idle_mib": round(idle),
                        "memory_after_burst_mib": round(busy),
                    },
                    indent=1,
                )
            )
        finally:
            _lab("down", "--lab", bp.name, "--purge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
