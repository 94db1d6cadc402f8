"""Capture a journey run on a Run:ai lab: the raw samples Prometheus stored for the series the journey's
rule, walk and snapshot read, the alert states, and the Kubernetes events and KAI log lines of the
workload the journey touched. The sibling of bench/capture_journeys.py (same files, same format).

    python3 bench/capture_journeys_runai.py gpu-fault [--blueprint B] [--out DIR] [--hold-s 120] \
        [--time-scale 5]
    python3 bench/capture_journeys_runai.py throttled [--blueprint B] [--out DIR] [--hold-s 60]

gpu-fault brings the blueprint's lab up afresh on the gpu-fault scenario, waits for
RunaiWorkloadGPUFault to fire, holds --hold-s more (the latch keeps the pod after the pod is gone) and
captures. Its time scale is 5 by default: the scenario's XID comes 15 blueprint minutes in, 3 wall
minutes at 5, so Prometheus scrapes the victim's GPU with its pod for a while before (at the lab tests'
20 it may be once). throttled runs on that lab, as the lab test does: a PyTorchJob of two 2-GPU
replicas in team-a, a busy minute, `lab fault throttle … power-brake` on the master's second GPU; it
waits for RunaiGPUSlowerThanItsWorkload to fire, holds, captures, clears the brake and deletes the
workload. Writes only under --out (default captures/journeys-runai-kai-<KAI version>/<journey>/); the
lab stays up.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from capture_journeys import store_series

from lab import promql, versions
from lab.blueprint.runai_blueprint import RunaiBlueprint, load
from lab.kube import manifests
from lab.kube.api import Client
from lab.kube.scenarios import LONG_RUN_S
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT, lab_state_dir
from lab.runai import Arrivals

CAPTURE_DIR = PROJECT_ROOT / "captures" / f"journeys-runai-kai-{versions.KAI_SCHEDULER_VERSION.lstrip('v')}"
TIME_SCALE = "20"  # blueprint seconds per wall second of the throttled workload, as the lab test runs it
REQUESTED = 'runai_requested_gpus_per_workload{{workload_name="{workload}"}}'
# The series each journey's rule, walk and snapshot read; {nodes} is the journey's nodes as a regex.
SELECTORS = {
    "gpu-fault": {
        "dcgm-xid-errors": 'DCGM_FI_DEV_XID_ERRORS{{Hostname=~"{nodes}"}}',
        "dcgm-gpu-util": 'DCGM_FI_DEV_GPU_UTIL{{Hostname=~"{nodes}"}}',
        "gpu-xid-latched": "hpc_job:dcgm_gpu_xid:latched",
        "kube-pod-info": 'kube_pod_info{{namespace="{namespace}"}}',
        "kube-pod-status-phase": 'kube_pod_status_phase{{namespace="{namespace}"}}',
        "runai-gpu-count-per-node": "runai_gpu_count_per_node",
        "runai-requested-gpus-per-workload": REQUESTED,
        "up": "up",
        "alerts": "ALERTS",
    },
    "throttled": {
        "dcgm-sm-clock": 'DCGM_FI_DEV_SM_CLOCK{{Hostname=~"{nodes}"}}',
        "dcgm-gpu-util": 'DCGM_FI_DEV_GPU_UTIL{{Hostname=~"{nodes}"}}',
        "dcgm-power-usage": 'DCGM_FI_DEV_POWER_USAGE{{Hostname=~"{nodes}"}}',
        "dcgm-pipe-tensor-active": 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{Hostname=~"{nodes}"}}',
        "kube-pod-info": 'kube_pod_info{{namespace="{namespace}"}}',
        "runai-requested-gpus-per-workload": REQUESTED,
        "up": "up",
        "alerts": "ALERTS",
    },
}
ALERT = {"gpu-fault": "RunaiWorkloadGPUFault", "throttled": "RunaiGPUSlowerThanItsWorkload"}
THROTTLED = "journey-throttle"  # the workload tests/lab/test_runai.py brakes, under the same name
REPLICAS, GPUS_PER_REPLICA, BRAKED_RANK = 2, 2, 1


def _lab(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "lab", *args], check=True, capture_output=True, text=True)


def _wait(condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(1.0)
    print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr)
    return value


def _firing(prometheus: str, alertname: str) -> list[promql.Series]:
    return promql.query(prometheus, f'ALERTS{{alertname="{alertname}", alertstate="firing"}}')


def _held_gpus(out: Path, namespace: str, prefix: str) -> dict[tuple[str, str], list[int]]:
    """(pod, node) -> GPU indices the hand-over file assigns to the pods named ``prefix``…"""
    path = out / "pod-resources.json"
    held: dict[tuple[str, str], list[int]] = {}
    if path.exists():
        for node, gpus in json.loads(path.read_text())["nodes"].items():
            for gpu, entry in gpus.items():
                if entry["namespace"] == namespace and entry["pod"].startswith(prefix):
                    held.setdefault((entry["pod"], node), []).append(int(gpu))
    return {key: sorted(gpus) for key, gpus in held.items()}


def gpu_fault(
    model: RunaiBlueprint, blueprint: Path, prometheus: str, hold_s: float, time_scale: str
) -> dict[str, Any]:
    """The gpu-fault scenario from a fresh lab; the journey's facts once its alert has held ``hold_s``."""
    _lab("down", "--lab", model.name, "--purge")
    start = time.time()
    _lab("up", "--blueprint", str(blueprint), "--scenario", "gpu-fault", "--time-scale", time_scale, "-q")
    path = lab_state_dir(model.name) / "runai" / "fault.json"
    fault = _wait(lambda: path.exists() and json.loads(path.read_text()), 300, "the XID on the victim's GPU")
    _wait(lambda: _firing(prometheus, ALERT["gpu-fault"]), 180, f"{ALERT['gpu-fault']} firing")
    time.sleep(hold_s)  # a capture, not a test: the window's length is the point
    return {
        "start": start,
        "time_scale": time_scale,
        "fault_at": fault["at"],
        "workload": fault["workload"],
        "namespace": fault["namespace"],
        "pod": fault["pod"],
        "nodes": [fault["node"]],
        "gpu": fault["gpu"],
    }


def throttled(model: RunaiBlueprint, prometheus: str, hold_s: float) -> dict[str, Any]:
    """The throttled-GPU journey on the running lab, as tests/lab/test_runai.py runs it."""
    admin = Client(
        lab_state_dir(model.name) / "kubeconfig", server=f"https://127.0.0.1:{model.ports.kube_apiserver}"
    )
    workload = Arrivals(model, random.Random(23)).make(
        model.workload_class("dist"),
        0.0,
        project="team-a",
        gpus_per_pod=GPUS_PER_REPLICA,
        run_seconds=LONG_RUN_S,
        will_fail=False,
    )
    workload.name, workload.pods_count = THROTTLED, REPLICAS
    start = time.time()
    job = admin.create(manifests.pytorch_job(model, workload, float(TIME_SCALE)))
    namespace = job["metadata"]["namespace"]
    out = lab_state_dir(model.name) / "runai"
    try:
        held = _wait(
            lambda: (
                (h := _held_gpus(out, namespace, f"{THROTTLED}-"))
                and sum(len(g) for g in h.values()) == REPLICAS * GPUS_PER_REPLICA
                and h
            ),
            180,
            "the workload's GPUs on both replicas",
        )
        util = f'DCGM_FI_DEV_GPU_UTIL{{namespace="{namespace}", pod=~"{THROTTLED}-.*"}}'
        busy = f"count((count_over_time({util}[1m]) >= 4) and (quantile_over_time(0.5, {util}[1m]) > 50))"
        gpus = REPLICAS * GPUS_PER_REPLICA
        _wait(lambda: [s for s in promql.query(prometheus, busy) if s.value == gpus], 150, "a busy minute")
        (pod, node), master = next((k, g) for k, g in held.items() if k[0].endswith("-master-0"))
        braked, fault_at = master[BRAKED_RANK], time.time()
        _lab("fault", "throttle", node, str(braked), "power-brake", "--lab", model.name)
        try:
            _wait(lambda: _firing(prometheus, ALERT["throttled"]), 240, f"{ALERT['throttled']} firing")
            time.sleep(hold_s)
        finally:
            _lab("fault", "throttle", node, str(braked), "clear", "--lab", model.name)
    finally:
        admin.delete("PyTorchJob", namespace, THROTTLED)
    return {
        "start": start,
        "fault_at": fault_at,
        "time_scale": TIME_SCALE,
        "workload": THROTTLED,
        "workload_id": job["metadata"]["uid"],
        "namespace": namespace,
        "pod": pod,
        "nodes": sorted({n for _, n in held}),
        "gpu": braked,
        "replicas": {f"{p} {n}": g for (p, n), g in held.items()},
    }


def store_events_and_logs(model: RunaiBlueprint, facts: dict[str, Any], out: Path) -> None:
    """The workload's events (Events API, as the driver copied them) and the KAI lines that name it."""
    state = lab_state_dir(model.name) / "runai"
    workload = facts["workload"]
    lines = (state / "events.jsonl").read_text(encoding="utf-8").splitlines()
    events = [line for line in lines if workload in line]
    (out / "events.jsonl").write_text("".join(f"{line}\n" for line in events), encoding="utf-8")
    found = []
    for log in sorted((state / "logs").glob("kai-*.log")):
        named = [line for line in log.read_text(errors="replace").splitlines() if workload in line]
        found += [f"==> {log.name} <==", *named]
    (out / "logs.txt").write_text("\n".join(found) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("journey", choices=sorted(SELECTORS))
    parser.add_argument("--blueprint", type=Path, default=BLUEPRINTS_DIR / "runai.yaml")
    parser.add_argument("--out", type=Path, help="default: captures/journeys-runai-kai-<version>/<journey>")
    parser.add_argument("--hold-s", type=float, help="seconds the alert fires before the capture")
    parser.add_argument("--time-scale", default="5", help="gpu-fault: blueprint seconds per wall second")
    args = parser.parse_args()
    model = load(args.blueprint)
    prometheus = f"http://127.0.0.1:{model.ports.prometheus}"
    out = args.out or CAPTURE_DIR / args.journey
    if args.journey == "gpu-fault":
        hold_s = 120.0 if args.hold_s is None else args.hold_s
        facts = gpu_fault(model, args.blueprint, prometheus, hold_s, args.time_scale)
    else:
        facts = throttled(model, prometheus, 60.0 if args.hold_s is None else args.hold_s)
    end = time.time()
    fields = {
        "nodes": "|".join(facts["nodes"]),
        "namespace": facts["namespace"],
        "workload": facts["workload"],
    }
    selectors = {name: selector.format(**fields) for name, selector in SELECTORS[args.journey].items()}
    store_series(prometheus, selectors, facts["start"], end, out)
    store_events_and_logs(model, facts, out)
    meta = {**facts, "end": end, "lab": model.name, "blueprint": args.blueprint.name}
    (out / "window.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
