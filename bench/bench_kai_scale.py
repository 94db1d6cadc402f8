"""KAI's own scale test (test/e2e/scale/ at KAI v0.13.0) in a Run:ai lab, and the driver's cost at that size.

    nice -n 10 python3 bench/bench_kai_scale.py [--blueprint bench/blueprints/runai-scale.yaml]
        [--cases fill,distributed] [--fill-timeout-s 1800] [--distributed-timeout-s 900] > out.txt

Brings the blueprint's lab up (500 kwok nodes of 8 GPUs), labels the nodes with KAI's topology tree
(zone 4 x block 8 x rack 8, 2 nodes a rack: topology.go) and creates its Topology, then runs through
the real API server:

- fill: 4,000 single-GPU Jobs (one per GPU, ``basicScaleTest`` "all services are running during job
  creation": the lab's scheduler cannot be switched off), created 8 at a time. Time: from the first
  Job's ``creationTimestamp`` to the last pod's ``PodScheduled`` ``lastTransitionTime`` (KAI's
  ``waitForAllJobsToSchedule``), and to the last pod's ``ContainersReady``.
- distributed: one 512-pod job of 2 GPUs a pod with preferred topology level rack (KAI's "Allocate
  single distributed job with preferred topology"), as a PyTorchJob gang (KAI's podgrouper reads the
  topology annotations of the top owner); when the training operator has not made every pod within
  ``--operator-timeout-s``, as KAI's test builds it instead: a PodGroup and 512 bare pods. Times: from
  the job's creation, and from its last pod's creation (where KAI's test turns its scheduler back on),
  to the last ``PodScheduled``.

Every wait polls every 10 s (KAI's podsPollIntervalSeconds) and prints progress; a case that does not
finish in its timeout reports how far it got. With the cluster full, the driver's cost is measured:
its own tick times (its log) and the API server's CPU (``process_cpu_seconds_total``) over a minute,
then over a minute in which this script also makes, each second, the lists the driver's tick made
before it watched (pods, Jobs, PyTorchJobs, events). ``--cases none`` measures an idle lab only (the
8-node baseline: ``--blueprint`` a copy of blueprints/runai.yaml). The lab is taken down at the end.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.blueprint.runai_blueprint import RunaiBlueprint, load
from lab.contract import container_name
from lab.kube import manifests, view
from lab.kube.api import ApiError, Client, Obj
from lab.paths import PROJECT_ROOT, lab_state_dir
from lab.runai import Arrivals

POLL_S = 10.0  # KAI's podsPollIntervalSeconds
CLEAR_TIMEOUT_S = 420.0  # the fill's pods gone before the next case (its pods are told apart anyway)
CREATORS = 8  # Jobs created at once (KAI's test starts one goroutine per Job)
LONG_S = 30 * 86400.0  # KAI's pods run `sleep infinity`
# topology.go / kwok_test.go: levels zone 4, block 8, rack 8; nodesPerDomain 2; names ShortName<i+1>.
LEVELS = (
    ("cloud.provider.com/topology-zone", "zone", 4),
    ("cloud.provider.com/topology-block", "block", 8),
    ("cloud.provider.com/topology-rack", "rack", 8),
)
NODES_PER_RACK = 2
TOPOLOGY = "e2e-topology-tree"
DISTRIBUTED_PODS, DISTRIBUTED_GPUS = 512, 2  # totalNodes pods of 2 GPUs each (kwok_test.go)
TOPOLOGY_ANNOTATION = "kai.scheduler/topology"  # podgrouper plugins/constants/constants.go
PREFERRED_ANNOTATION = "kai.scheduler/topology-preferred-placement"
POD_GROUP_ANNOTATION = "pod-group-name"  # KAI e2e pod_group.PodGroupNameAnnotation


def say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)


def lab(*args: str) -> float:
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "lab", *args], check=True, cwd=PROJECT_ROOT)
    return time.monotonic() - began


def stamp(text: str | None) -> float | None:
    return view.timestamp(text)


def condition_time(pod: Obj, kind: str) -> float | None:
    for condition in pod.get("status", {}).get("conditions", []) or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return stamp(condition.get("lastTransitionTime"))
    return None


def in_parallel(work: list[Callable[[], object]]) -> int:
    """Run every call, CREATORS at once; returns how many raised an API error (each said)."""
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(CREATORS) as pool:
        for future in concurrent.futures.as_completed([pool.submit(w) for w in work]):
            try:
                future.result()
            except (ApiError, OSError) as error:
                failed += 1
                say(f"refused: {error}")
    return failed


# --- the API server's and the driver's cost ------------------------------------------------------
def apiserver_cpu_s(client: Client) -> float:
    match = re.search(r"^process_cpu_seconds_total (\S+)$", client.get_text("/metrics"), re.M)
    assert match, "kube-apiserver /metrics has no process_cpu_seconds_total"
    return float(match.group(1))


def driver_ticks(bp: RunaiBlueprint) -> str:
    """The driver's last report of its tick times (lab.kube.driver logs one a minute)."""
    out = subprocess.run(
        ["docker", "exec", container_name(bp.name, "runai"), "grep", "ticks:", "/var/log/runai.log"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.splitlines()[-1].split(" lab.kube.driver ")[-1] if out else "no tick report yet"


def old_tick_reads(client: Client) -> None:
    """What the driver's tick read before it watched: every labelled pod and workload, every event."""
    selector = manifests.QUEUE_LABEL
    client.list("Pod", labelSelector=selector)
    for kind in view.WORKLOAD_KINDS:
        client.list(kind, labelSelector=selector)
    client.list("Event")


def measure_driver(client: Client, bp: RunaiBlueprint, seconds: float) -> dict[str, Any]:
    say(f"driver and API server, watching driver alone: {seconds:.0f} s")
    cpu, began = apiserver_cpu_s(client), time.monotonic()
    time.sleep(seconds)
    watching = (apiserver_cpu_s(client) - cpu) / (time.monotonic() - began)
    ticks = driver_ticks(bp)
    say(f"  API server {watching:.2f} CPU; driver {ticks}")
    say(f"the same with the old tick's lists every second: {seconds:.0f} s")
    cpu, began, rounds = apiserver_cpu_s(client), time.monotonic(), []
    while time.monotonic() - began < seconds:
        start = time.monotonic()
        old_tick_reads(client)
        rounds.append(time.monotonic() - start)
        time.sleep(max(0.0, 1.0 - rounds[-1]))
    listing = (apiserver_cpu_s(client) - cpu) / (time.monotonic() - began)
    say(
        f"  API server {listing:.2f} CPU; old lists {sum(rounds) / len(rounds):.2f} s mean, "
        f"{max(rounds):.2f} s max over {len(rounds)} rounds"
    )
    return {
        "apiserver_cpu_watching": round(watching, 3),
        "driver_ticks": ticks,
        "apiserver_cpu_with_old_lists": round(listing, 3),
        "old_lists_mean_s": round(sum(rounds) / len(rounds), 3),
        "old_lists_max_s": round(max(rounds), 3),
        "old_list_rounds": len(rounds),
    }


# --- waiting on pods --------------------------------------------------------------------------------
def pods_of(client: Client, namespace: str) -> list[Obj]:
    return client.list_paged("Pod", namespace)[0]


# A pod runs once its containers are ready. Not its Ready condition: when kwok renews 500 node leases
# late on a loaded host, the node controller sets Ready False on the node's pods, and kwok does not
# set it back when the node is Ready again.
RUNNING = "ContainersReady"


def wait_scheduled(
    client: Client, namespace: str, expected: int, timeout_s: float, accept: Callable[[Obj], bool]
) -> list[Obj]:
    """Poll until ``expected`` pods are scheduled and running, or the timeout; the last look's pods."""
    deadline = time.monotonic() + timeout_s
    while True:
        pods = [p for p in pods_of(client, namespace) if accept(p)]
        scheduled = sum(1 for p in pods if condition_time(p, "PodScheduled"))
        ready = sum(1 for p in pods if condition_time(p, RUNNING))
        say(f"  pods {len(pods)}/{expected}, scheduled {scheduled}, running {ready}")
        if ready >= expected or time.monotonic() > deadline:
            return pods
        time.sleep(POLL_S)


def last(pods: list[Obj], what: Callable[[Obj], float | None]) -> float | None:
    times = [what(p) for p in pods]
    return max(t for t in times if t is not None) if any(t is not None for t in times) else None


def clear(client: Client, namespace: str, kinds: tuple[str, ...]) -> None:
    """Delete every object of ``kinds`` in the namespace (one collection delete each) and wait."""
    for kind in kinds:
        client.request("DELETE", client.path(kind, namespace), query={"propagationPolicy": "Background"})
    deadline = time.monotonic() + CLEAR_TIMEOUT_S
    while (left := len(pods_of(client, namespace))) and time.monotonic() < deadline:
        say(f"  {left} pods left")
        time.sleep(POLL_S)


# --- the cases --------------------------------------------------------------------------------------
def label_topology(client: Client, bp: RunaiBlueprint) -> None:
    """KAI's topology tree over the nodes in order: 2 nodes a rack, 8 racks a block, 8 blocks a zone
    (512 nodes fill it; 500 leave the last 6 racks empty)."""
    client.apply(
        {
            "apiVersion": "kai.scheduler/v1alpha1",
            "kind": "Topology",
            "metadata": {"name": TOPOLOGY},
            "spec": {"levels": [{"nodeLabel": label} for label, _, _ in LEVELS]},
        }
    )
    nodes = [n for p in bp.node_pools for n in p.node_names()]

    def labels(index: int) -> dict[str, str]:
        rack = index // NODES_PER_RACK
        place = (
            rack // (LEVELS[1][2] * LEVELS[2][2]),
            rack // LEVELS[2][2] % LEVELS[1][2],
            rack % LEVELS[2][2],
        )
        return {label: f"{short}{at + 1}" for (label, short, _), at in zip(LEVELS, place, strict=True)}

    work: list[Callable[[], object]] = [
        functools.partial(client.merge_patch, "Node", None, n, {"metadata": {"labels": labels(i)}})
        for i, n in enumerate(nodes)
    ]
    say(f"topology labels on {len(nodes)} nodes: {in_parallel(work)} refused")


def fill(client: Client, bp: RunaiBlueprint, timeout_s: float) -> dict[str, Any]:
    gpus = sum(p.nodes * p.gpus_per_node for p in bp.node_pools)
    wclass = bp.workload_class("fill")
    project = wclass.projects[0]
    namespace = manifests.namespace_of(project)
    arrivals = Arrivals(bp, random.Random(7))
    jobs = []
    for _ in range(gpus):
        w = arrivals.make(wclass, 0.0, project=project, gpus_per_pod=1, run_seconds=LONG_S, will_fail=False)
        jobs.append(manifests.job(bp, w, 1.0))
    say(f"fill: creating {len(jobs)} single-GPU Jobs in {namespace}")
    began = time.monotonic()
    refused = in_parallel([functools.partial(client.create, j) for j in jobs])
    created_s = time.monotonic() - began
    say(f"  created in {created_s:.0f} s ({refused} refused)")
    pods = wait_scheduled(client, namespace, gpus, timeout_s, lambda p: True)
    first = min(
        stamp(j["metadata"]["creationTimestamp"]) or 0.0 for j in client.list_paged("Job", namespace)[0]
    )
    scheduled = last(pods, lambda p: condition_time(p, "PodScheduled"))
    ready = last(pods, lambda p: condition_time(p, RUNNING))
    return {
        "jobs": len(jobs),
        "create_s": round(created_s, 1),
        "pods_scheduled": sum(1 for p in pods if condition_time(p, "PodScheduled")),
        "pods_running": sum(1 for p in pods if condition_time(p, RUNNING)),
        "to_last_scheduled_s": round(scheduled - first, 1) if scheduled else None,
        "to_last_running_s": round(ready - first, 1) if ready else None,
    }


def distributed(
    client: Client, bp: RunaiBlueprint, timeout_s: float, operator_timeout_s: float
) -> dict[str, Any]:
    wclass = bp.workload_class("fill")
    project = wclass.projects[0]
    namespace = manifests.namespace_of(project)
    w = Arrivals(bp, random.Random(11)).make(
        wclass, 0.0, project=project, gpus_per_pod=DISTRIBUTED_GPUS, run_seconds=LONG_S, will_fail=False
    )
    w.pods_count, w.name = DISTRIBUTED_PODS, f"dist-{w.name}"
    job = manifests.pytorch_job(bp, w, 1.0)
    job["metadata"]["annotations"] = {TOPOLOGY_ANNOTATION: TOPOLOGY, PREFERRED_ANNOTATION: LEVELS[2][0]}
    say(
        f"distributed: PyTorchJob {w.name}, {DISTRIBUTED_PODS} pods x {DISTRIBUTED_GPUS} GPUs, preferred rack"
    )
    created = stamp(client.create(job)["metadata"]["creationTimestamp"])
    shape = "PyTorchJob"
    deadline = time.monotonic() + operator_timeout_s

    def mine(pod: Obj) -> bool:
        return str(pod["metadata"]["name"]).startswith(f"{w.name}-")

    while (
        made := sum(map(mine, pods_of(client, namespace)))
    ) < DISTRIBUTED_PODS and time.monotonic() < deadline:
        say(f"  the training operator made {made} pods")
        time.sleep(POLL_S)
    if made < DISTRIBUTED_PODS:
        say(f"  only {made} pods after {operator_timeout_s:.0f} s: KAI's shape instead (PodGroup, bare pods)")
        clear(client, namespace, ("PyTorchJob",))
        shape = "PodGroup and bare pods"
        created = podgroup_job(client, bp, w.name, namespace, manifests.job(bp, w, 1.0)["spec"]["template"])
    pods = wait_scheduled(client, namespace, DISTRIBUTED_PODS, timeout_s, mine)
    last_created = last(pods, lambda p: stamp(p["metadata"].get("creationTimestamp")))
    scheduled = last(pods, lambda p: condition_time(p, "PodScheduled"))
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in client.list_paged("Node")[0]}
    racks = {
        tuple(nodes.get(p["spec"].get("nodeName", ""), {}).get(label) for label, _, _ in LEVELS)
        for p in pods
        if p["spec"].get("nodeName")
    }
    return {
        "shape": shape,
        "pods": len(pods),
        "pods_scheduled": sum(1 for p in pods if condition_time(p, "PodScheduled")),
        "from_creation_s": round(scheduled - created, 1) if scheduled and created else None,
        "from_last_pod_s": round(scheduled - last_created, 1) if scheduled and last_created else None,
        "racks_used": len(racks),
        "racks_needed": DISTRIBUTED_PODS
        * DISTRIBUTED_GPUS
        // (NODES_PER_RACK * bp.node_pools[0].gpus_per_node),
    }


def podgroup_job(
    client: Client, bp: RunaiBlueprint, name: str, namespace: str, template: Obj
) -> float | None:
    """KAI's createDistributedJobForKwok: a PodGroup with the topology constraint, then its pods."""
    pool = bp.node_pools[0].name
    group = client.create(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "minMember": DISTRIBUTED_PODS,
                "queue": manifests.queue_name("sanity", pool),
                "priorityClassName": template["spec"]["priorityClassName"],
                "topologyConstraint": {"topology": TOPOLOGY, "preferredTopologyLevel": LEVELS[2][0]},
            },
        }
    )

    def pod(index: int) -> Obj:
        meta = template["metadata"]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{index}",
                "namespace": namespace,
                "labels": dict(meta["labels"]),
                "annotations": {**meta["annotations"], POD_GROUP_ANNOTATION: name},
            },
            "spec": template["spec"],
        }

    refused = in_parallel([functools.partial(client.create, pod(i)) for i in range(DISTRIBUTED_PODS)])
    say(f"  {DISTRIBUTED_PODS} pods created, {refused} refused")
    return stamp(group["metadata"]["creationTimestamp"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blueprint", type=Path, default=PROJECT_ROOT / "bench/blueprints/runai-scale.yaml")
    parser.add_argument("--cases", default="fill,distributed", help="fill, distributed, both, or none")
    parser.add_argument("--fill-timeout-s", type=float, default=1800)
    parser.add_argument("--distributed-timeout-s", type=float, default=900)
    parser.add_argument("--operator-timeout-s", type=float, default=300)
    parser.add_argument("--measure-s", type=float, default=60)
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c and c != "none"]
    bp = load(args.blueprint)
    results: dict[str, Any] = {"lab": bp.name, "nodes": sum(p.nodes for p in bp.node_pools)}
    lab("down", "--lab", bp.name, "--purge")
    try:
        say(f"bringing up {bp.name}")
        results["bring_up_s"] = round(
            lab("up", "--blueprint", str(args.blueprint), "--scenario", "baseline"), 1
        )
        # A collection delete of 4,000 Jobs is one request that takes the server minutes on 2 cores.
        server = f"https://127.0.0.1:{bp.ports.kube_apiserver}"
        client = Client(lab_state_dir(bp.name) / "kubeconfig", server=server, timeout_s=600)
        time.sleep(args.measure_s)  # the driver's first tick report (once a minute) covers an idle lab
        results["idle"] = measure_driver(client, bp, args.measure_s)
        if "distributed" in cases:
            label_topology(client, bp)
        if "fill" in cases:
            results["fill"] = fill(client, bp, args.fill_timeout_s)
            say(json.dumps(results["fill"]))
            results["filled"] = measure_driver(client, bp, args.measure_s)
            say("clearing the fill")
            clear(client, manifests.namespace_of(bp.workload_class("fill").projects[0]), ("Job", "Pod"))
        if "distributed" in cases:
            results["distributed"] = distributed(
                client, bp, args.distributed_timeout_s, args.operator_timeout_s
            )
            say(json.dumps(results["distributed"]))
    finally:
        print(json.dumps(results, indent=1), flush=True)
        lab("down", "--lab", bp.name, "--purge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
