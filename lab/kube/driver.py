"""The Run:ai side of the real cluster, run in the lab's container by ``python3 -m lab.kube drive``.

It does what Run:ai's control plane and the kubelets' device managers would, and nothing the real
software does itself:

1. Tenancy: KAI's priority classes (the tag's files), project namespaces, KAI Queues and the kwok nodes
   of the blueprint (:mod:`lab.kube.manifests`).
2. Workloads: the blueprint's arrival mix (:mod:`lab.runai.arrivals`) and the scenario's scripted work
   (:mod:`lab.kube.scenarios`), submitted as batch/v1 Jobs (one pod) or PyTorchJobs (distributed).
   KAI's podgrouper, scheduler and binder place them (a PyTorchJob as one gang); kwok runs and ends
   their pods; the Job controller and Kubeflow's training operator replace preempted pods.
3. Two emulated steps. Node pools (:mod:`lab.kube.nodepools`): a PodGroup that names no node pool
   gets one from its project's priority list, as Run:ai's pod-group assigner would, or a Warning event
   saying why not. Devices (:mod:`lab.kube.devices`): bound pods get GPU indices, handed to the DCGM
   shim's Kubernetes mode; an XID marks its GPU unhealthy and fails the pod through kwok's own
   failure stage.
4. Signals: ``runai_*`` (Run:ai docs 2.18) computed from the API server's objects (:mod:`lab.kube.view`),
   served on ``/metrics``; one DCGM target per node; the Events API copied to ``events.jsonl``.
"""

from __future__ import annotations

import datetime
import json
import logging
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from lab import contract
from lab.blueprint.runai_blueprint import RunaiBlueprint
from lab.dcgm.shim import ListeningHTTPServer
from lab.dcgm.shim import serve as serve_dcgm
from lab.exposition import PROMETHEUS_TEXT_CONTENT_TYPE
from lab.kube import controlplane, manifests, nodepools, scenarios, view
from lab.kube.api import ApiError, Client, documents, wait_until
from lab.kube.devices import BoundPod, DeviceAssigner
from lab.kube.reflector import Reflector
from lab.kube.scenarios import Scenario
from lab.paths import atomic_write
from lab.runai import (
    Arrivals,
    ClusterState,
    DcgmBridge,
    RestApi,
    Workload,
    render,
    runai_samples,
    serve_rest,
)

log = logging.getLogger("lab.kube.driver")
TICK_S = 1.0  # wall seconds between two looks at the cluster
TICKS_PER_REPORT = 60  # the log says how long ticks took once a minute
# The runai_* text is rebuilt every tick while that is cheap; at thousands of workloads one rebuild
# takes seconds, so the next waits until rebuilding uses at most this share of the driver's time,
# and at most the lab's scrape interval (Prometheus reads it no more often).
METRICS_SHARE = 0.2
METRICS_MAX_WAIT_S = 15.0  # prometheus_scrape_interval
Obj = dict[str, Any]


@dataclass
class Driver:
    bp: RunaiBlueprint
    client: Client
    out: Path
    scenario: Scenario
    time_scale: float
    seed: int
    tag_dir: Path
    started: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)
    metrics: str = ""
    submitted: int = 0
    watched: dict[str, Reflector] = field(default_factory=dict)  # kind → its list-and-watch
    metrics_due: float = 0.0  # time.monotonic() of the next runai_* rebuild
    rest: RestApi | None = None  # the Run:ai REST API, fed every look at the cluster and every scrape
    placed: set[str] = field(default_factory=set)  # uids of PodGroups the pod-group assigner handled

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.arrivals = Arrivals(self.bp, random.Random(self.seed + 1))
        node_gpus = {n: p.gpus_per_node for p in self.bp.node_pools for n in p.node_names()}
        self.devices = DeviceAssigner(node_gpus)
        self.last_active: dict[tuple[str, int], float] = {}
        self.dcgm: DcgmBridge | None = None

    # --- clock ----------------------------------------------------------------------------------
    def sim_seconds(self) -> float:
        """Blueprint seconds since the start: wall seconds times the time scale."""
        return (time.time() - self.started) * self.time_scale

    # --- 1. tenancy -----------------------------------------------------------------------------
    def bootstrap(self) -> None:
        for path in sorted((self.tag_dir / "priorityclasses").glob("*.yaml")):
            for obj in documents(path.read_text(encoding="utf-8")):
                self.client.apply(obj)
        for obj in manifests.namespaces(self.bp) + manifests.queues(self.bp):
            self.client.apply(obj)
        for node in manifests.nodes(self.bp):
            self.client.apply(node)
            self.client.merge_patch(
                "Node", None, node["metadata"]["name"], {"status": node["status"]}, status=True
            )

        def service_accounts_ready() -> bool:
            names = {
                sa["metadata"]["namespace"]
                for sa in self.client.list("ServiceAccount")
                if sa["metadata"]["name"] == "default"
            }
            return all(manifests.namespace_of(p.name) in names for p in self.bp.projects)

        # Pods are refused until the controller manager made each namespace's default service account.
        wait_until(service_accounts_ready, 60, "default service accounts of the project namespaces")

        def nodes_ready() -> bool:
            ready = 0
            for node in self.client.list_paged("Node")[0]:
                conditions = node.get("status", {}).get("conditions", []) or []
                taints = node.get("spec", {}).get("taints", []) or []
                if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions) and not taints:
                    ready += 1
            return ready == len(self.devices.node_gpus)

        # kwok reports a few hundred nodes Ready within seconds; a SuperPOD-scale lab's list is long.
        nodes = len(self.devices.node_gpus)
        wait_until(nodes_ready, 120 + nodes / 2, "kwok nodes Ready without taints", interval_s=1.0)

    # --- 2. workloads ---------------------------------------------------------------------------
    def submit(self, workload: Workload) -> None:
        job = manifests.workload(self.bp, workload, self.time_scale)
        try:
            self.client.create(job)
            self.submitted += 1
        except ApiError as error:
            log.warning("job %s/%s refused: %s", job["metadata"]["namespace"], workload.name, error)

    def place_pod_groups(self, pods: list[Obj]) -> None:
        """Run:ai's pod-group assigner (:mod:`lab.kube.nodepools`): a PodGroup that names no node pool
        gets one from its project's priority list, or a Warning event saying why it cannot."""
        groups = self.watched["PodGroup"].items()
        self.placed &= {g["metadata"]["uid"] for g in groups}
        waiting = [
            g
            for g in groups
            if manifests.NODE_POOL_LABEL not in (g["metadata"].get("labels") or {})
            and g["metadata"]["uid"] not in self.placed
        ]
        if not waiting:
            return
        free = nodepools.free_gpus_by_pool(self.bp, pods)
        now = time.time()
        for group in waiting:
            meta = group["metadata"]
            gpus, seen = nodepools.gang_gpus(group, pods)
            created = view.timestamp(meta.get("creationTimestamp")) or now
            if seen == 0 and now - created < nodepools.PODS_GRACE_S:
                continue  # its pods are not annotated yet: count its GPUs on a later tick
            outcome = nodepools.decide(self.bp, group, gpus, free)
            try:
                if isinstance(outcome, nodepools.Assignment):
                    self.client.merge_patch(
                        "PodGroup", meta["namespace"], meta["name"], nodepools.patch(outcome)
                    )
                    free[outcome.pool] -= gpus
                    log.info(
                        "pod group %s/%s: node pool %s, queue %s (%s)",
                        meta["namespace"],
                        meta["name"],
                        outcome.pool,
                        outcome.queue,
                        outcome.why,
                    )
                else:
                    stamp = datetime.datetime.fromtimestamp(now, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                    self.client.create(nodepools.event(group, outcome, stamp))
                    log.warning(
                        "pod group %s/%s has no node pool: %s",
                        meta["namespace"],
                        meta["name"],
                        outcome.reason,
                    )
            except ApiError as error:
                log.warning("pod group %s/%s: %s", meta["namespace"], meta["name"], error)
                continue
            self.placed.add(meta["uid"])

    # --- 3. devices -----------------------------------------------------------------------------
    def assign_devices(self, pods: list[Obj]) -> None:
        if self.devices.assign(bound_pods(pods)) and self.dcgm is not None:
            self.dcgm.write(self.devices.mapping())

    # --- 4. signals -----------------------------------------------------------------------------
    def copy_events(self) -> None:
        """Every event the watch saw added or changed since the last tick, one JSON line each."""
        lines = [json.dumps(event, sort_keys=True) for event in self.watched["Event"].changes()]
        if lines:
            with (self.out / "events.jsonl").open("a", encoding="utf-8") as stream:
                stream.write("\n".join(lines) + "\n")

    def refresh_metrics(self, jobs: list[Obj], pods: list[Obj]) -> None:
        assert self.dcgm is not None
        stats = self.dcgm.gpu_stats()
        now = time.time()
        for key, stat in stats.items():
            if stat.util_pct > 0:
                self.last_active[key] = now
        cluster = view.build(self.bp, now, jobs, pods, self.devices, stats, self.last_active)
        text = runai_metrics(cluster)
        with self.lock:
            self.metrics = text
            if self.rest is not None:
                self.rest.observe(cluster)

    def watch_cluster(self) -> None:
        """Start following the lab's pods, workloads and events (one paged list, then a watch each),
        and wait for their first lists: a tick reads them from memory, whatever the cluster's size."""
        for kind in ("Pod", *view.WORKLOAD_KINDS):
            self.watched[kind] = Reflector(self.client, kind, label_selector=manifests.QUEUE_LABEL)
        self.watched["PodGroup"] = Reflector(self.client, "PodGroup")
        self.watched["Event"] = Reflector(self.client, "Event", keep_changes=True)
        for reflector in self.watched.values():
            reflector.start()
        wait_until(
            lambda: all(r.synced.is_set() for r in self.watched.values()),
            120,
            "the first lists of pods, Jobs, PyTorchJobs, PodGroups and events",
        )

    def tick(self, last_t: float) -> float:
        t = self.sim_seconds()
        dt = max(0.0, t - last_t)
        for wclass in self.arrivals.due(dt):
            self.submit(self.arrivals.make(wclass, t))
        pods = self.watched["Pod"].items()
        scenarios.play(self, self.scenario, t, dt, pods)
        self.place_pod_groups(pods)
        self.assign_devices(pods)
        if time.monotonic() >= self.metrics_due:
            began = time.monotonic()
            self.refresh_metrics(
                [j for kind in view.WORKLOAD_KINDS for j in self.watched[kind].items()], pods
            )
            spent = time.monotonic() - began
            self.metrics_due = began + min(METRICS_MAX_WAIT_S, spent / METRICS_SHARE)
        self.copy_events()
        return t


def bound_pods(pods: list[Obj]) -> list[BoundPod]:
    """The pods that hold devices: bound to a node and not yet terminated."""
    live = []
    for pod in pods:
        node = pod["spec"].get("nodeName")
        phase = pod.get("status", {}).get("phase", "Pending")
        if not node or phase in ("Succeeded", "Failed"):
            continue
        annotations = pod["metadata"].get("annotations", {})
        owner = view.workload_owner(pod)
        live.append(
            BoundPod(
                pod["metadata"]["uid"],
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
                node,
                view.gpus_of(pod),
                pod["spec"]["containers"][0]["name"],
                annotations.get(manifests.DCGM_CLASS_ANNOTATION),
                owner["name"] if owner else None,
            )
        )
    return live


def runai_metrics(cluster: ClusterState) -> str:
    """The ``/metrics`` text of one look at the cluster. A sample that
    :mod:`lab.runai.sourced_families` does not hold raises :class:`lab.runai.expfmt.ExpositionError`;
    the tick loop only logs it, so the unit tests render a busy cluster with this function."""
    return render(list(runai_samples(cluster)))


class _Handler(BaseHTTPRequestHandler):
    server: _MetricsServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/metrics":
            driver = self.server.driver
            with driver.lock:
                body = driver.metrics.encode()
                # Prometheus' own scrapes (it sends this header) are what the REST API's metrics keep.
                if driver.rest is not None and self.headers.get("X-Prometheus-Scrape-Timeout-Seconds"):
                    driver.rest.scraped(time.time())
            self._send(200, PROMETHEUS_TEXT_CONTENT_TYPE, body)
        elif self.path == "/health":
            self._send(200, "text/plain; charset=utf-8", b"OK")
        else:
            self._send(404, "text/plain; charset=utf-8", b"404 page not found\n")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """No access log."""


class _MetricsServer(ListeningHTTPServer):
    def __init__(self, driver: Driver, address: str) -> None:
        self.driver = driver
        super().__init__(address, _Handler)


def drive(
    driver: Driver, address: str, dcgm_addresses: dict[str, str], rest_address: str | None = None
) -> None:
    """Bootstrap, then tick until killed; the REST API listens on ``rest_address`` when it has one."""
    wait_until(driver.client.ready, 300, "kube-apiserver /readyz")
    wait_until(lambda: _listable(driver.client, "Queue"), 300, "KAI's Queue CRD")
    # A PyTorchJob is admitted only through the operator's webhook: the operator must be ready first.
    operator = f"http://127.0.0.1:{contract.KUBE_HEALTH_PORTS['training-operator']}/readyz"
    wait_until(lambda: controlplane.answers(operator), 300, "the training operator's /readyz")
    _clear_outputs(driver.out)
    driver.dcgm = DcgmBridge(
        (
            (n, g, driver.bp.pool(_pool_of(driver.bp, n)).model_name)
            for n, g in driver.devices.node_gpus.items()
        ),
        driver.out,
        seed=driver.seed,
        clock=driver.sim_seconds,
        address_for=dcgm_addresses.__getitem__,
    )
    driver.bootstrap()
    driver.watch_cluster()
    server = _MetricsServer(driver, address)
    shim = serve_dcgm(list(driver.dcgm.nodes.values()))
    threading.Thread(target=server.serve_forever, name="runai-metrics", daemon=True).start()
    rest = serve_rest(driver.rest, rest_address) if driver.rest is not None and rest_address else None
    log.info("driving: scenario %s, time scale %s", driver.scenario.name, driver.time_scale)
    atomic_write(driver.out / "driver.json", json.dumps({"started": driver.started}) + "\n", mode=0o644)
    last = 0.0
    took: list[float] = []
    try:
        while True:
            began = time.monotonic()
            try:
                last = driver.tick(last)
            except (ApiError, OSError) as error:
                log.warning("tick: %s", error)
            except Exception:  # a bug in one look at the cluster must not end the lab's driver
                log.exception("tick failed")
            spent = time.monotonic() - began
            took.append(spent)
            if len(took) == TICKS_PER_REPORT:
                _report_ticks(driver, took)
                took = []
            time.sleep(max(0.0, TICK_S - spent))
    finally:
        server.shutdown()
        shim.shutdown()
        if rest is not None:
            rest.shutdown()
            rest.server_close()


def _report_ticks(driver: Driver, took: list[float]) -> None:
    """How long the last ticks took: a tick longer than TICK_S means the driver falls behind."""
    log.info(
        "ticks: %d, mean %.3f s, max %.3f s; %d pods, %d workloads, %d full lists",
        len(took),
        sum(took) / len(took),
        max(took),
        len(driver.watched["Pod"].items()),
        sum(len(driver.watched[kind].items()) for kind in view.WORKLOAD_KINDS),
        sum(r.lists for r in driver.watched.values()),
    )


def _clear_outputs(out: Path) -> None:
    """A driver start is a new cluster's: the last run's events, fault and GPU hand-over go."""
    for name in ("events.jsonl", "fault.json", "pod-resources.json", "driver.json"):
        (out / name).unlink(missing_ok=True)
    faults = out / "faults"
    if faults.is_dir():
        for path in sorted(faults.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()


def _listable(client: Client, kind: str) -> bool:
    try:
        client.list(kind)
        return True
    except (ApiError, OSError):
        return False


def _pool_of(bp: RunaiBlueprint, node: str) -> str:
    return next(p.name for p in bp.node_pools if node in p.node_names())
