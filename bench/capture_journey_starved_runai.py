"""Run the Run:ai "slow job, starved" journey on a live lab, time the alert, and capture what it read.

    python3 bench/capture_journey_starved_runai.py [--blueprint B] [--runs 3] \
        [--out captures/journeys-runai-kai-0.13.0/starved]

Each run is a fresh cluster: `lab up --scenario preemption-storm --time-scale 10 --seed <run>` (another
seed than the lab's current one, or `lab up` leaves the running cluster as it is). team-a
borrows the default pool with gangs (PyTorchJobs), team-b claims its quota and KAI reclaims a gang;
the training operator recreates it. Then, until one gang has been reclaimed twice, as a team that
finishes its work and comes back would: team-b's workloads end (deleted), the gangs borrow the pool
again, team-b claims its quota again, and KAI reclaims again. The time from the second reclaim (KAI's
log line) to the receiver getting `RunaiWorkloadReclaimedRepeatedly` for that gang is printed per run
(BENCHMARKS.md).

The last run is captured under --out, in the format of captures/journeys-slurm-24.11.5/
(bench/capture_journeys.py): one ``<selector>.json`` per series the rule and the walk read (Prometheus'
raw samples: /api/v1/query of ``<selector>[<window>]``), ``alerts.json`` (ALERTS), the events of the
reclaimed gang and its claimants (``events.jsonl``), the scheduler's and the training operator's lines
naming the gang (``logs.txt``) and ``window.json``. The lab stays up.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from capture_journeys import store_series

from lab import contract
from lab.alerts.listing import read_delivered
from lab.blueprint.runai_blueprint import RunaiBlueprint, load
from lab.kube import manifests, scenarios
from lab.kube.api import Client
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT, lab_state_dir
from lab.runai import Arrivals

ALERT = "RunaiWorkloadReclaimedRepeatedly"
# tests/lab/test_runai.py's for the journey: at 60 the arrivals of several blueprint hours split the
# nodes a reclaimed gang needs whole to borrow again; at 10 the storm still claims 84 s after the fill.
TIME_SCALE = "10"
# The series RunaiWorkloadReclaimedRepeatedly and the journey's walk read (docs/journeys.md).
SELECTORS = {
    "kai-pod-group-evicted-pods-total": "kai_pod_group_evicted_pods_total",
    "kai-queue-allocated-gpus": "kai_queue_allocated_gpus",
    "kai-queue-deserved-gpus": "kai_queue_deserved_gpus",
    "kai-queue-fair-share-gpu": "kai_queue_fair_share_gpu",
    "runai-requested-gpus-per-workload": "runai_requested_gpus_per_workload",
    "runai-allocated-gpu-count-per-workload": "runai_allocated_gpu_count_per_workload",
    "up": "up",
    "alerts": "ALERTS",
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # KAI's zap console encoder colours its columns
RECLAIM = re.compile(r"^(\S+Z)\s.*\.go:\d+\s+\[(\w{6})\].*evicting reclaimee tasks: (.*)$")
GANG_POD = re.compile(r"<runai-team-a/([^>\s]+?)-(?:master|worker)-\d+>")


def _until(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        if time.monotonic() > deadline:
            raise SystemExit(f"capture_journey_starved_runai: {what}: not after {timeout_s:.0f} s")
        time.sleep(1.0)
    print(f"  {what}", flush=True)
    return found


def _unix(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def reclaims(log: str) -> dict[str, list[float]]:
    """gang name -> Unix time of each scheduling session that reclaimed it, from KAI's log."""
    sessions: dict[str, dict[str, float]] = {}
    for line in log.splitlines():
        match = RECLAIM.match(ANSI.sub("", line))
        if not match:
            continue
        stamp, session, victims = match.groups()
        for gang in set(GANG_POD.findall(victims)):
            sessions.setdefault(gang, {}).setdefault(session, _unix(stamp))
    return {gang: sorted(times.values()) for gang, times in sessions.items()}


def _claim(bp: RunaiBlueprint, client: Client, round_: int) -> None:
    """team-b claims its quota again, as the storm's burst did."""
    for index, workload in enumerate(scenarios.claim(bp, Arrivals(bp, random.Random(round_)), 0.0)):
        workload.name = f"claim-{round_}-{index:02d}"
        client.create(manifests.job(bp, workload, float(TIME_SCALE)))


def _total(seen: dict[str, list[float]]) -> int:
    return sum(len(times) for times in seen.values())


def _running_again(client: Client, gangs: set[str]) -> bool:
    """One of the reclaimed gangs has all its replicas running again (the others may wait: an arrival
    can take part of a node a replica needs whole)."""
    pods = client.list("Pod", "runai-team-a")
    for job in client.list("PyTorchJob", "runai-team-a"):
        if job["metadata"]["name"] not in gangs:
            continue
        uid = job["metadata"]["uid"]
        wanted = sum(r["replicas"] for r in job["spec"]["pytorchReplicaSpecs"].values())
        running = [
            p
            for p in pods
            if any(o["uid"] == uid for o in p["metadata"].get("ownerReferences", []))
            and p.get("status", {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")
        ]
        if len(running) == wanted:
            return True
    return False


def run(bp: RunaiBlueprint, blueprint: Path, seed: int) -> dict[str, Any]:
    """One journey on a fresh cluster; returns what the capture and the benchmark need."""
    started = time.time()  # the storm reclaims within seconds of the driver starting, inside `lab up`
    subprocess.run(
        [
            sys.executable,
            "-m",
            "lab",
            "up",
            "--blueprint",
            str(blueprint),
            "--scenario",
            "preemption-storm",
            "--time-scale",
            TIME_SCALE,
            "--seed",
            str(seed),
            "-q",
        ],
        check=True,
    )
    out = lab_state_dir(bp.name) / "runai"
    client = Client(
        lab_state_dir(bp.name) / "kubeconfig", server=f"https://127.0.0.1:{bp.ports.kube_apiserver}"
    )

    def seen() -> dict[str, list[float]]:
        path = out / "logs" / "kai-scheduler-default.log"
        found = reclaims(path.read_text(encoding="utf-8", errors="replace")) if path.exists() else {}
        return {gang: [t for t in times if t >= started] for gang, times in found.items()}

    _until("the storm reclaims a gang", lambda: any(seen().values()), 240)
    for round_ in range(1, 6):
        if max(len(t) for t in seen().values()) >= 2:
            break
        before = _total(seen())
        for job in client.list("Job", "runai-team-b"):
            client.delete("Job", "runai-team-b", job["metadata"]["name"])
        borrowing = functools.partial(_running_again, client, set(seen()))
        _until(f"round {round_}: a reclaimed gang running again", borrowing, 300)
        _claim(bp, client, round_)

        def again(before: int = before) -> bool:
            return _total(seen()) > before

        _until(f"round {round_}: KAI reclaims again", again, 240)
    victim, times = max(seen().items(), key=lambda item: (len(item[1]), -item[1][0]))
    if len(times) < 2:
        raise SystemExit(f"no gang reclaimed twice in five rounds: {seen()}")
    second = times[1]
    alerts = contract.alerts_dir(bp.name) / contract.ALERTS_FILE

    def delivered() -> float | None:
        for d in reversed(read_delivered(alerts)):  # the first delivery after the second reclaim
            if (
                d.status == "firing"
                and _unix(d.received_at) >= second
                and any(
                    a["labels"].get("alertname") == ALERT and a["labels"].get("workload_name") == victim
                    for a in d.alerts
                )
            ):
                return _unix(d.received_at)
        return None

    received = _until(f"{ALERT} for {victim} delivered", delivered, 300)
    job = client.get(Client.path("PyTorchJob", "runai-team-a", victim))
    seconds = received - second
    print(f"seed {seed}: {victim} reclaimed at {times}; {ALERT} delivered {seconds:.1f} s after the second")
    # The capture's window opens at the driver's start: the cluster's first moment, after the last one's.
    driver = json.loads((out / "driver.json").read_text(encoding="utf-8"))
    return {
        "start": driver["started"],
        "victim": victim,
        "workload_id": job["metadata"]["uid"],
        "reclaims": times,
        "delivered": received,
        "seconds_to_delivery": seconds,
    }


def capture(bp: RunaiBlueprint, journey: dict[str, Any], out_dir: Path) -> None:
    prometheus = f"http://127.0.0.1:{bp.ports.prometheus}"
    end = time.time()
    store_series(prometheus, SELECTORS, journey["start"], end, out_dir)
    victim, uid = journey["victim"], journey["workload_id"]
    state = lab_state_dir(bp.name) / "runai"
    group = f"pg-{victim}-{uid}"
    events = [
        line
        for line in (state / "events.jsonl").read_text(encoding="utf-8").splitlines()
        if f'"name": "{group}"' in line
        or f'"name": "{victim}"' in line
        or re.search(f'"name": "{re.escape(victim)}-(master|worker)-', line)
    ]
    (out_dir / "events.jsonl").write_text("\n".join(events) + "\n", encoding="utf-8")
    lines = []
    for log in ("kai-scheduler-default.log", "training-operator.log"):
        text = (state / "logs" / log).read_text(encoding="utf-8", errors="replace")
        found = [line for line in text.splitlines() if f"runai-team-a/{victim}" in line or group in line]
        lines += [f"==> {log} <==", *found]
    (out_dir / "logs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    meta = {**journey, "end": end, "lab": bp.name}
    (out_dir / "window.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blueprint", type=Path, default=BLUEPRINTS_DIR / "runai.yaml")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="runs take seeds from here on; a seed the lab runs now would not restart it",
    )
    parser.add_argument(
        "--out", type=Path, default=PROJECT_ROOT / "captures" / "journeys-runai-kai-0.13.0" / "starved"
    )
    args = parser.parse_args()
    bp = load(args.blueprint)
    journeys = [run(bp, args.blueprint, seed) for seed in range(args.first_seed, args.first_seed + args.runs)]
    capture(bp, journeys[-1], args.out)
    seconds = [j["seconds_to_delivery"] for j in journeys]
    print(
        f"{ALERT} after the second reclaim, {len(seconds)} runs: median {statistics.median(seconds):.1f} s, "
        f"max {max(seconds):.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
