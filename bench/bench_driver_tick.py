"""The compute of one driver tick at KAI's scale, without a cluster: device assignment, the GPUs'
DCGM statistics, the Run:ai view and the ``runai_*`` text, for ``--pods`` single-GPU Jobs bound and
Running on the scale blueprint's 500 nodes (what the API server would hold after KAI's fill); then the
Run:ai API on that state: its snapshot per look, and one request of each kind, with six hours of
scrapes (every 15 s) in its history.

    nice -n 10 python3 bench/bench_driver_tick.py [--pods 4000] [--rounds 3] [--blueprint PATH]
"""

from __future__ import annotations

import argparse
import copy
import random
import tempfile
import time
import uuid
from pathlib import Path

from lab.blueprint.runai_blueprint import RunaiBlueprint, load
from lab.kube import manifests, nodepools, view
from lab.kube.api import Obj
from lab.kube.devices import DeviceAssigner
from lab.kube.driver import bound_pods, runai_metrics
from lab.paths import PROJECT_ROOT
from lab.runai import Arrivals, ClusterState, DcgmBridge, RestApi, rest_auth

STAMP = "2026-12-06T00:00:00Z"


def running_pod(job: Obj, node: str) -> Obj:
    """The Job controller's pod of the Job, bound by KAI and Running under kwok."""
    meta, template = job["metadata"], job["spec"]["template"]
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }
    return {
        "metadata": {
            "name": f"{meta['name']}-x",
            "namespace": meta["namespace"],
            "uid": str(uuid.uuid4()),
            "creationTimestamp": STAMP,
            "labels": dict(template["metadata"]["labels"]),
            "annotations": dict(template["metadata"]["annotations"]),
            "ownerReferences": [owner],
        },
        "spec": copy.deepcopy(template["spec"]) | {"nodeName": node},
        "status": {"phase": "Running", "startTime": STAMP},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--blueprint", type=Path, default=PROJECT_ROOT / "bench" / "blueprints" / "runai-scale.yaml"
    )
    args = parser.parse_args()
    bp = load(args.blueprint)
    wclass = bp.workload_class("fill")
    arrivals = Arrivals(bp, random.Random(0))
    nodes = [(n, p.gpus_per_node, p.model_name) for p in bp.node_pools for n in p.node_names()]
    slots = [n for n, gpus, _ in nodes for _ in range(gpus)]
    jobs, pods = [], []
    for slot in slots[: args.pods]:
        w = arrivals.make(
            wclass, 0.0, project=wclass.projects[0], gpus_per_pod=1, run_seconds=86400.0, will_fail=False
        )
        job = manifests.job(bp, w, 1.0)
        job["metadata"] |= {"uid": str(uuid.uuid4()), "creationTimestamp": STAMP}
        jobs.append(job)
        pods.append(running_pod(job, slot))
    dcgm = DcgmBridge(nodes, Path(tempfile.mkdtemp()), seed=0, clock=lambda: 100.0)
    devices = DeviceAssigner({n: g for n, g, _ in nodes})
    for _ in range(args.rounds):
        began = time.monotonic()
        if devices.assign(bound_pods(pods)):
            dcgm.write(devices.mapping())
        assigned = time.monotonic()
        stats = dcgm.gpu_stats()
        read = time.monotonic()
        cluster = view.build(bp, time.time(), jobs, pods, devices, stats, {})
        built = time.monotonic()
        text = runai_metrics(cluster)
        done = time.monotonic()
        print(
            f"{len(pods)} pods: assign {assigned - began:.2f} s, DCGM statistics {read - assigned:.2f} s, "
            f"view {built - read:.2f} s, runai_* text {done - built:.2f} s ({len(text) / 1e6:.1f} MB), "
            f"total {done - began:.2f} s",
            flush=True,
        )
    assigner(bp, pods)
    api_requests(bp, cluster)


def assigner(bp: RunaiBlueprint, pods: list[Obj]) -> None:
    """The pod-group assigner's cost in a tick with 100 PodGroups that name no pool waiting."""
    groups = [
        {"metadata": {"name": f"pg-{i}", "namespace": "x", "uid": str(i)}, "spec": {"queue": "x"}}
        for i in range(100)
    ]
    began = time.monotonic()
    free = nodepools.free_gpus_by_pool(bp, pods)
    counted = time.monotonic()
    for group in groups:
        nodepools.decide(bp, group, nodepools.gang_gpus(group, pods)[0], free)
    done = time.monotonic()
    print(
        f"pod-group assigner: free GPUs of {len(pods)} pods {1000 * (counted - began):.1f} ms, "
        f"100 PodGroups decided {1000 * (done - counted):.1f} ms",
        flush=True,
    )


def api_requests(bp: RunaiBlueprint, cluster: ClusterState) -> None:
    """The Run:ai API's cost on this state: a look's snapshot, then each request's answer time."""
    now = time.time()
    creds = rest_auth.Credentials(rest_auth.CLIENT_ID, "bench", b"k" * rest_auth.SIGNING_KEY_BYTES)
    api = RestApi(creds, "image", clock=lambda: now)
    began = time.monotonic()
    api.observe(cluster)
    print(f"Run:ai API: snapshot of one look {1000 * (time.monotonic() - began):.1f} ms", flush=True)
    for k in range(6 * 240, 0, -1):  # six hours of scrapes, 15 s apart
        api.scraped(now - 15.0 * k)
    start, end = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)) for t in (now - 6 * 3600, now))
    window = f"start={start}&end={end}&numberOfSamples=1000"
    headers = {"authorization": f"Bearer {rest_auth.issue(creds, now)}"}
    for what, target in (
        (
            "cluster metrics, 6 h, 1,000 samples",
            f"/api/v1/clusters/{bp.cluster_id}/metrics?metricType=ALLOCATED_GPU,TOTAL_GPU&{window}",
        ),
        ("node telemetry by node", "/api/v1/nodes/telemetry?telemetryType=ALLOCATED_GPUS&groupBy=Node"),
        ("workloads list, 100", "/api/v1/workloads?limit=100"),
        ("the cluster's nodes", f"/api/v1/clusters/{bp.cluster_id}/nodes"),
        ("node pools", "/api/v1/node-pools"),
        ("projects", "/api/v1/org-unit/projects"),
    ):
        began = time.monotonic()
        answer = api.handle("GET", target, headers)
        assert answer.status == 200, answer.body
        print(f"Run:ai API: {what} {1000 * (time.monotonic() - began):.1f} ms", flush=True)


if __name__ == "__main__":
    main()
