"""Capture distributed workloads as gangs on the Run:ai lab's real path, for provenance: PyTorchJobs run
by Kubeflow's training operator, grouped by KAI's podgrouper and placed, held back and reclaimed by
KAI's scheduler as gangs.

    python3 bench/capture_gangs.py [--out captures/runai-kai-0.13.0/gangs]

On the shipped Run:ai blueprint's baseline at real time (its arrivals seldom come in the few minutes
this takes), three steps, as tests/lab/test_runai.py runs them:

1. team-a's 4-replica PyTorchJob ``gang-fits`` (32 GPUs) on the empty default pool: bound whole;
2. team-b's 3-replica ``gang-waits`` (24 GPUs) while 16 GPUs are free: pending whole, then deleted;
3. team-a's 2-replica ``gang-borrows`` fills the pool, and team-b claims its quota of 16 with
   single-GPU training: KAI reclaims team-a's gangs.

Writes only under --out: the PyTorchJobs and PodGroups as the API server returns them, the events of
the gangs' objects (the first 3 of every reason, source and kind), the KAI scheduler's log lines that
name a gang, the kai_* series of the gangs' PodGroups, and the training operator's log head and
/metrics. Takes the lab down at the end.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capture_kube import CAPTURE_DIR, run_lab, scrape_in_container

from lab import contract
from lab.blueprint.runai_blueprint import RunaiBlueprint, load
from lab.kube import manifests
from lab.kube.api import Client
from lab.kube.scenarios import LONG_RUN_S
from lab.paths import BLUEPRINTS_DIR, lab_state_dir
from lab.runai import Arrivals

EVENTS_PER_KIND = 3
LOG_LINES = 150
GANG_GPUS = 8


def _until(what: str, check: Callable[[], bool], timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"capture_gangs: {what}: not after {timeout_s:.0f} s")
        time.sleep(1.0)
    print(f"  {what}", flush=True)


def _workload(bp: RunaiBlueprint, name: str, project: str, pods: int, gpus: int) -> Any:
    wclass = bp.workload_class("dist" if pods > 1 else "train")
    w = Arrivals(bp, random.Random(name)).make(
        wclass, 0.0, project=project, gpus_per_pod=gpus, run_seconds=LONG_RUN_S, will_fail=False
    )
    w.name, w.pods_count = name, pods
    return manifests.workload(bp, w, 1.0)


def _running(client: Client, namespace: str, prefix: str) -> int:
    pods = client.list("Pod", namespace)
    return sum(
        1
        for p in pods
        if p["metadata"]["name"].startswith(prefix) and p.get("status", {}).get("phase") == "Running"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=CAPTURE_DIR / "gangs")
    args = parser.parse_args()
    bp = load(BLUEPRINTS_DIR / "runai.yaml")
    state = lab_state_dir(bp.name)
    try:
        print("lab up (baseline, real time)", flush=True)
        run_lab("up", "--blueprint", str(BLUEPRINTS_DIR / "runai.yaml"), "--scenario", "baseline", "-q")
        client = Client(state / "kubeconfig", server=f"https://127.0.0.1:{bp.ports.kube_apiserver}")
        client.create(_workload(bp, "gang-fits", "team-a", 4, GANG_GPUS))
        _until("gang-fits: 4 replicas running", lambda: _running(client, "runai-team-a", "gang-fits-") == 4)
        client.create(_workload(bp, "gang-waits", "team-b", 3, GANG_GPUS))
        log = state / "runai" / "logs" / "kai-scheduler-default.log"
        _until(
            "gang-waits: tried in 5 scheduling sessions",
            lambda: (
                log.read_text(errors="replace").count(
                    "Could not allocate resources for job: <runai-team-b/pg-gang-waits"
                )
                >= 5
            ),
        )
        pending = client.get(Client.path("PyTorchJob", "runai-team-b", "gang-waits"))
        pending_groups = client.list("PodGroup", "runai-team-b")
        client.delete("PyTorchJob", "runai-team-b", "gang-waits")
        client.create(_workload(bp, "gang-borrows", "team-a", 2, GANG_GPUS))
        _until(
            "gang-borrows: 2 replicas running", lambda: _running(client, "runai-team-a", "gang-borrows-") == 2
        )
        for index in range(16):
            claim = _workload(bp, f"claim-{index:02d}", "team-b", 1, 1)
            client.create(claim)
        _until(
            "a reclaim of team-a's gangs",
            lambda: any(
                "evicting reclaimee tasks" in line and "gang-" in line
                for line in log.read_text(errors="replace").splitlines()
            ),
        )
        _until("team-b's 16 claims running", lambda: _running(client, "runai-team-b", "claim-") == 16)
        time.sleep(15)  # let the operator's restart and KAI's next sessions land in the record
        _write(args.out, bp, client, state, pending, pending_groups)
    finally:
        run_lab("down", "--lab", bp.name, "--purge")
    print(f"wrote {args.out}")
    return 0


def _write(
    out: Path,
    bp: RunaiBlueprint,
    client: Client,
    state: Path,
    pending: dict[str, Any],
    pending_groups: list[dict[str, Any]],
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    jobs = [j for ns in ("runai-team-a", "runai-team-b") for j in client.list("PyTorchJob", ns)] + [pending]
    (out / "pytorchjobs.json").write_text(json.dumps(jobs, indent=1) + "\n")
    groups = [
        g
        for ns in ("runai-team-a",)
        for g in client.list("PodGroup", ns)
        if g["metadata"]["name"].startswith("pg-gang-")
    ] + [g for g in pending_groups if g["metadata"]["name"].startswith("pg-gang-")]
    (out / "podgroups.json").write_text(json.dumps(groups, indent=1) + "\n")
    seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
    kept = []
    for line in (state / "runai" / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        involved = event["involvedObject"]
        if not involved.get("name", "").startswith(("gang-", "pg-gang-")):
            continue
        key = (
            event.get("reason", ""),
            event.get("source", {}).get("component", ""),
            involved.get("kind", ""),
        )
        seen[key] += 1
        if seen[key] <= EVENTS_PER_KIND:
            kept.append(line)
    (out / "events.jsonl").write_text("\n".join(kept) + "\n")
    (out / "event-counts.json").write_text(
        json.dumps({" / ".join(k): n for k, n in sorted(seen.items())}, indent=1) + "\n"
    )
    logs = state / "runai" / "logs"
    scheduler = [
        line
        for line in (logs / "kai-scheduler-default.log").read_text(errors="replace").splitlines()
        if "gang-" in line
    ]
    if len(scheduler) > 2 * LOG_LINES:
        scheduler = scheduler[:LOG_LINES] + scheduler[-LOG_LINES:]
    (out / "kai-scheduler-default-gangs.log").write_text("\n".join(scheduler) + "\n")
    operator = (logs / "training-operator.log").read_text(errors="replace").splitlines()
    (out / "training-operator.log").write_text("\n".join(operator[:LOG_LINES]) + "\n")
    container = contract.container_name(bp.name, "runai")
    kai = scrape_in_container(container, contract.kai_scheduler_port(0)).splitlines()
    (out / "metrics-kai-scheduler-default-gangs.txt").write_text(
        "\n".join(line for line in kai if line.startswith("#") or "pg-gang-" in line) + "\n"
    )
    (out / "metrics-training-operator.txt").write_text(
        scrape_in_container(container, contract.KUBE_PORTS["training-operator"])
    )


if __name__ == "__main__":
    sys.exit(main())
