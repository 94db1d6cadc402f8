"""The Run:ai lab on a real Kubernetes: the control plane, KAI Scheduler, kwok and kube-state-metrics
in the lab's container, real Prometheus scraping them, and each failure mode decided by the real
scheduler (events from the Events API, series from the real binaries). The documented PromQL walk runs
on the gpu-fault scenario."""

from __future__ import annotations

import json
import random
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from lab import contract, promql, versions
from lab.kinds import runai_lab
from lab.kube import controlplane, manifests
from lab.kube.api import ApiError, Client
from lab.kube.driver import LONG_RUN_S
from lab.kube.view import gpus_of
from lab.paths import BLUEPRINTS_DIR, lab_state_dir
from lab.runai.arrivals import Arrivals
from lab.runai.joins import walk
from lab.spec.runai_blueprint import RunaiBlueprint, load

from .conftest import delivered, run_lab, silent_panels, unix_time, wait_for

pytestmark = pytest.mark.lab

BLUEPRINT = BLUEPRINTS_DIR / "runai.yaml"
PROMETHEUS = f"http://127.0.0.1:{contract.RUNAI_HOST_PORTS['prometheus']}"
# Blueprint seconds per wall second. gpu-fault: the XID (at 15 min) comes after 45 s, so Prometheus
# (15 s interval) scrapes the victim's GPU with its pod label a few times before, as in real time.
# The other scenarios only need their scripted submissions soon.
TIME_SCALE = {"gpu-fault": "20", "quota-exhaustion": "60", "preemption-storm": "60"}


def _up(scenario: str) -> None:
    run_lab(
        "up",
        "--blueprint",
        str(BLUEPRINT),
        "--scenario",
        scenario,
        "--time-scale",
        TIME_SCALE[scenario],
        "-q",
    )


def _out(model: RunaiBlueprint) -> Path:
    return lab_state_dir(model.name) / "runai"


def _client(model: RunaiBlueprint, identity: str = "admin") -> Client:
    path = lab_state_dir(model.name) / (
        "kubeconfig" if identity == "admin" else f"keys/kube/{identity}.kubeconfig"
    )
    return Client(path, server=f"https://127.0.0.1:{contract.RUNAI_HOST_PORTS['kube-apiserver']}")


# The driver appends the Events API's events as it reads them; only whole lines count.
def _events(model: RunaiBlueprint) -> list[dict[str, Any]]:
    path = _out(model) / "events.jsonl"
    if not path.exists():
        return []
    data = path.read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines() if line.strip()]


@pytest.fixture(scope="module")
def runai() -> Iterator[RunaiBlueprint]:
    model = load(BLUEPRINT)
    # From nothing: a lab left by an aborted run would keep its cluster and stale faults.
    run_lab("down", "--lab", model.name, "--purge")
    _up("gpu-fault")
    yield model
    run_lab("down", "--lab", model.name, "--purge")


def test_prometheus_scrapes_every_target(runai: RunaiBlueprint) -> None:
    ports = controlplane.PORTS
    expected = {
        ("runai", f"runai:{contract.RUNAI_API_PORT}"),
        ("kube-state-metrics", f"runai:{ports['kube-state-metrics']}"),
        ("prometheus", "localhost:9090"),
    }
    expected |= {
        (f"kai-{p.name}", f"runai:{controlplane.scheduler_port(i)}") for i, p in enumerate(runai.node_pools)
    }
    expected |= {(c, f"runai:{ports[c]}") for c in ("kai-binder", "kai-podgrouper", "kai-queuecontroller")}
    expected |= {("dcgm", f"{node}:9400") for node in runai_lab.node_names(runai)}

    def healthy() -> set[tuple[str, str]]:
        return {
            (t["labels"]["job"], t["labels"]["instance"])
            for t in promql.targets(PROMETHEUS)
            if t["health"] == "up"
        }

    wait_for(lambda: healthy() >= expected, 60, "every target up")


def test_the_control_plane_is_real_with_rbac_and_private_credentials(runai: RunaiBlueprint) -> None:
    admin = _client(runai)
    assert admin.get("/version")["gitVersion"] == versions.KUBERNETES_VERSION
    kubeconfig = lab_state_dir(runai.name) / "kubeconfig"
    assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o400
    # RBAC is on: kube-state-metrics may list pods but not create them.
    ksm = _client(runai, "kube-state-metrics")
    assert ksm.list("Pod") is not None
    with pytest.raises(ApiError) as refused:
        ksm.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "not-allowed"}})
    assert refused.value.status == 403
    # The blueprint's tenancy: a KAI queue per project and pool it holds quota in, kwok nodes Ready.
    queues = {q["metadata"]["name"]: q for q in admin.list("Queue")}
    assert queues["team-c-inference"]["spec"]["resources"]["gpu"]["quota"] == 16
    assert queues["team-a-default"]["spec"]["parentQueue"] == "research-default"
    nodes = admin.list("Node")
    assert sorted(n["metadata"]["name"] for n in nodes) == sorted(runai_lab.node_names(runai))
    assert all(n["status"]["allocatable"]["nvidia.com/gpu"] == "8" for n in nodes)


def test_bound_pods_hold_exactly_their_gpus_in_the_dcgm_hand_over(runai: RunaiBlueprint) -> None:
    admin = _client(runai)

    def running() -> list[dict[str, Any]]:
        return [
            p
            for p in admin.list("Pod", labelSelector="kai.scheduler/queue")
            if p.get("status", {}).get("phase") == "Running"
        ]

    wait_for(running, 120, "a Running pod")

    def consistent() -> bool:
        before = {p["metadata"]["uid"]: p for p in running()}
        document = json.loads((_out(runai) / "pod-resources.json").read_text())["nodes"]
        after = {p["metadata"]["uid"]: p for p in running()}
        stable = [p for uid, p in before.items() if uid in after]
        held: dict[tuple[str, str], list[str]] = {}
        for node, gpus in document.items():
            for gpu, entry in gpus.items():
                held.setdefault((entry["namespace"], entry["pod"]), []).append(f"{node}/{gpu}")
        return bool(stable) and all(
            len(held.get((p["metadata"]["namespace"], p["metadata"]["name"]), [])) == gpus_of(p)
            and all(
                g.startswith(p["spec"]["nodeName"] + "/")
                for g in held[(p["metadata"]["namespace"], p["metadata"]["name"])]
            )
            for p in stable
        )

    wait_for(consistent, 30, "pod-resources.json matching the API server's Running pods")


def test_documented_walk_finds_exactly_the_faulted_gpu_and_node(runai: RunaiBlueprint) -> None:
    fault = wait_for(lambda: _fault(runai), 180, "the XID on the victim's GPU")
    node, gpu = fault["node"], str(fault["gpu"])

    def faulted_answer() -> dict[tuple[str, str], list[promql.Series]]:
        failed = promql.query(PROMETHEUS, walk("", "", []).steps[0][1])
        found = {}
        for workload in failed:
            key = (workload.labels["created_by_name"], workload.labels["namespace"])
            rows = promql.query(PROMETHEUS, walk(*key, []).combined)
            if rows:
                found[key] = rows
        return found

    walks = wait_for(faulted_answer, 120, "a failed workload whose walk reaches an XID")
    assert len(walks) == 1, f"only the faulted workload's walk may return rows: {walks}"
    (workload, namespace), rows = next(iter(walks.items()))
    assert (workload, namespace) == (fault["workload"], fault["namespace"])
    assert [(r.labels["Hostname"], r.labels["gpu"]) for r in rows] == [(node, gpu)]
    row = rows[0].labels
    assert row["err_code"] == "79" and row["pod"] == fault["pod"]
    assert row["UUID"].startswith("GPU-") and row["nodepool"] in {pool.name for pool in runai.node_pools}


def test_gpu_fault_journey_alert_names_the_workload_project_node_and_gpu_and_reaches_events_and_kai(
    runai: RunaiBlueprint,
) -> None:
    """docs/journeys.md, failed job on the Run:ai lab: RunaiWorkloadGPUFault delivered through the real
    Alertmanager to the lab's receiver, and the walk's last step in the events and KAI's logs."""
    fault = wait_for(lambda: _fault(runai), 180, "the XID on the victim's GPU")
    found = wait_for(
        lambda: delivered(runai.name, "RunaiWorkloadGPUFault", "firing", fault["at"]),
        150,  # a scrape and an evaluation (no `for:`), then group_wait
        "RunaiWorkloadGPUFault delivered to the receiver",
    )
    seconds = unix_time(found[-1].received_at) - fault["at"]
    print(f"RunaiWorkloadGPUFault delivered {seconds:.1f} s after the fault")  # BENCHMARKS.md
    (alert,) = [
        a
        for a in found[-1].alerts
        if a["labels"]["alertname"] == "RunaiWorkloadGPUFault" and a["status"] == "firing"
    ]
    labels = alert["labels"]
    assert (labels["workload_name"], labels["namespace"], labels["pod"]) == (
        fault["workload"],
        fault["namespace"],
        fault["pod"],
    )
    assert (labels["Hostname"], labels["gpu"], labels["err_code"]) == (fault["node"], str(fault["gpu"]), "79")
    assert labels["project"] == fault["namespace"].removeprefix("runai-") and labels["severity"] == "critical"
    # Walk, step 4: the pod's Scheduled event names its node, and KAI's binder logged the binding.
    scheduled = [
        e
        for e in _events(runai)
        if e["reason"] == "Scheduled" and e["involvedObject"]["name"] == fault["pod"]
    ]
    assert scheduled and f"to node {fault['node']}" in scheduled[0]["message"], scheduled
    binder = (_out(runai) / "logs" / "kai-binder.log").read_text(errors="replace")
    assert any(fault["pod"] in line and "Binding pod" in line for line in binder.splitlines())


def test_gpu_fault_fails_the_job_by_its_pod_failure_policy(runai: RunaiBlueprint) -> None:
    fault = wait_for(lambda: _fault(runai), 180, "the XID on the victim's GPU")
    admin = _client(runai)

    def failed() -> dict[str, Any] | None:
        job = admin.get(Client.path("Job", fault["namespace"], fault["workload"]))
        return next(
            (
                c
                for c in job.get("status", {}).get("conditions", []) or []
                if c["type"] == "Failed" and c["status"] == "True"
            ),
            None,
        )

    condition = wait_for(failed, 60, "the victim Job Failed")
    assert condition["reason"] == "PodFailurePolicy"
    events = wait_for(
        lambda: [
            e
            for e in _events(runai)
            if e["reason"] == "PodFailurePolicy" and e["involvedObject"]["name"] == fault["workload"]
        ],
        60,
        "the Job's PodFailurePolicy event",
    )
    assert events[0]["type"] == "Warning" and events[0]["source"]["component"] == "job-controller"
    assert "exit code 134" in events[0]["message"]


def _fault(model: RunaiBlueprint) -> dict[str, Any] | None:
    path = _out(model) / "fault.json"
    return json.loads(path.read_text()) if path.exists() else None


THROTTLED_WORKLOAD = "journey-throttle"  # the slow-job journey's own workload (a user's 4-GPU training)
BRAKED_RANK = 1  # the second of its GPUs gets the power brake


def _held_gpus(model: RunaiBlueprint, namespace: str, prefix: str) -> tuple[str, str, list[int]] | None:
    """(pod, node, GPU indices) of the pod of a Job whose GPUs the hand-over file assigns, once assigned."""
    path = _out(model) / "pod-resources.json"
    if not path.exists():
        return None
    held: dict[tuple[str, str], list[int]] = {}
    for node, gpus in json.loads(path.read_text())["nodes"].items():
        for gpu, entry in gpus.items():
            if entry["namespace"] == namespace and entry["pod"].startswith(prefix):
                held.setdefault((entry["pod"], node), []).append(int(gpu))
    return next(((pod, node, sorted(g)) for (pod, node), g in held.items()), None)


class Braked(NamedTuple):
    job: dict[str, Any]  # the Job as the API server created it
    pod: str
    node: str
    gpu: int
    injected_at: float


@pytest.fixture
def braked_gpu_of_a_running_workload(runai: RunaiBlueprint) -> Iterator[Braked]:
    """A user's 4-GPU training workload in team-a, running for a busy minute, then a power brake on its
    second GPU through `lab fault throttle`; afterwards the brake cleared and the workload deleted."""
    admin, train = _client(runai), runai.workload_class("train")
    workload = Arrivals(runai, random.Random(23)).make(
        train, 0.0, project="team-a", gpus_per_pod=4, run_seconds=LONG_RUN_S, will_fail=False
    )
    workload.name = THROTTLED_WORKLOAD
    job = admin.create(manifests.job(runai, workload, float(TIME_SCALE["gpu-fault"])))
    namespace = job["metadata"]["namespace"]
    try:
        pod, node, gpus = wait_for(
            lambda: _held_gpus(runai, namespace, f"{THROTTLED_WORKLOAD}-"), 180, "the workload's 4 GPUs"
        )
        assert len(gpus) == 4, gpus
        # A busy minute: four scrapes of each GPU, their median utilisation high. A median, because the
        # shim's training model stalls a step now and then (GPU_UTIL 0 for a scrape), more often in wall
        # time at the lab's time scale.
        util = f'DCGM_FI_DEV_GPU_UTIL{{pod="{pod}"}}'
        busy = (
            f"count((count_over_time({util}[1m]) >= 4) and (quantile_over_time(0.5, {util}[1m]) > 50)) == 4"
        )
        wait_for(lambda: promql.query(PROMETHEUS, busy), 150, "a busy minute on each of its GPUs")
        braked, injected_at = gpus[BRAKED_RANK], time.time()
        run_lab("fault", "throttle", node, str(braked), "power-brake", "--lab", runai.name)
        try:
            yield Braked(job, pod, node, braked, injected_at)
        finally:
            run_lab("fault", "throttle", node, str(braked), "clear", "--lab", runai.name)
    finally:
        admin.delete("Job", namespace, THROTTLED_WORKLOAD)


def test_slow_job_throttled_gpu_alert_names_the_workload_and_gpu_and_the_walk_shows_its_peers_waiting(
    runai: RunaiBlueprint, braked_gpu_of_a_running_workload: Braked
) -> None:
    """docs/journeys.md, slow job, throttled GPU, on the Run:ai lab: RunaiGPUSlowerThanItsWorkload
    delivered for exactly the braked GPU, and the walk from the workload's GPUs to its peers waiting."""
    job, pod, node, braked, injected = braked_gpu_of_a_running_workload
    found = wait_for(
        lambda: delivered(runai.name, "RunaiGPUSlowerThanItsWorkload", "firing", injected),
        210,  # a minute of slow scrapes, the rule's `for: 1m`, an evaluation and group_wait
        "RunaiGPUSlowerThanItsWorkload delivered to the receiver",
    )
    seconds = unix_time(found[-1].received_at) - injected
    print(f"RunaiGPUSlowerThanItsWorkload delivered {seconds:.1f} s after the fault")  # BENCHMARKS.md
    # Only the braked GPU fires: no healthy GPU of this or any other running workload is named.
    firing = [
        a["labels"]
        for a in found[-1].alerts
        if a["labels"]["alertname"] == "RunaiGPUSlowerThanItsWorkload" and a["status"] == "firing"
    ]
    assert [(a["Hostname"], a["gpu"]) for a in firing] == [(node, str(braked))], firing
    labels = firing[0]
    assert (labels["workload_name"], labels["project"], labels["namespace"], labels["pod"]) == (
        THROTTLED_WORKLOAD,
        "team-a",
        job["metadata"]["namespace"],
        pod,
    )
    assert labels["workload_id"] == job["metadata"]["uid"] and labels["workload_type"] == "training"
    assert labels["severity"] == "warning"

    # Walk, step 1: the workload's GPUs side by side; only the straggler's highest clock is low (a power
    # brake halves it: 990 MHz, signals/dcgm.md "Throttled GPU").
    selector = f'namespace="{job["metadata"]["namespace"]}", pod="{pod}"'
    clocks = promql.query(PROMETHEUS, f"max by (gpu) (max_over_time(DCGM_FI_DEV_SM_CLOCK{{{selector}}}[1m]))")
    by_gpu = {s.labels["gpu"]: s.value for s in clocks}
    assert by_gpu[str(braked)] == 990.0 and len(by_gpu) == 4, by_gpu
    assert all(mhz == 1980.0 for gpu, mhz in by_gpu.items() if gpu != str(braked)), by_gpu
    # Step 2: the cause on the straggler: its power far below its peers'.
    power = promql.query(
        PROMETHEUS, f"max by (gpu) (avg_over_time(DCGM_FI_DEV_POWER_USAGE{{{selector}}}[1m]))"
    )
    watts = {s.labels["gpu"]: s.value for s in power}
    assert watts[str(braked)] < 0.5 * min(w for gpu, w in watts.items() if gpu != str(braked)), watts
    # Step 3: its peers wait for it: their tensor activity below the busy minute before the fault.
    tensor = f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{selector}, gpu!="{braked}"}}'
    median = f"avg(quantile_over_time(0.5, {tensor}[1m]))"
    now, before = promql.query(PROMETHEUS, median), promql.query(PROMETHEUS, median, at=injected)
    assert now and before and now[0].value < 0.75 * before[0].value, (now, before)
    # Step 4: the workload's Run:ai id, project and node from the series Run:ai and Kubernetes emit.
    info = promql.query(PROMETHEUS, f"kube_pod_info{{{selector}}}")
    assert [s.labels["node"] for s in info] == [node], info
    requested = promql.query(
        PROMETHEUS, f'runai_requested_gpus_per_workload{{workload_name="{THROTTLED_WORKLOAD}"}}'
    )
    assert {(s.labels["workload_id"], s.labels["project"]) for s in requested} == {
        (job["metadata"]["uid"], "team-a")
    }, requested
    # The journey's dashboard: every panel answers while the fault is in.
    assert not silent_panels(PROMETHEUS, "journey-slow-job-throttled-gpu-runai.json")


def test_quota_exhaustion_shows_a_backlog_and_kai_quota_reasons(runai: RunaiBlueprint) -> None:
    started = time.time()
    _up("quota-exhaustion")
    pending = 'count(kube_pod_status_phase{phase="Pending", namespace="runai-team-c"} == 1)'
    wait_for(
        lambda: [s for s in promql.query(PROMETHEUS, pending) if s.value >= 10], 120, "a pending backlog"
    )
    unschedulable = wait_for(
        lambda: [
            e
            for e in _events(runai)
            if e["reason"] == "Unschedulable" and e["involvedObject"]["kind"] == "Pod"
        ],
        60,
        "Unschedulable events",
    )
    assert all(e["source"]["component"] == runai.scheduler_name for e in unschedulable)
    assert any(str(e["message"]).startswith("NonPreemptibleOverQuota: ") for e in unschedulable)
    # KAI never runs a non-preemptible workload over its queue's quota: team-c holds at most its 8 GPUs.
    allocated = (
        'sum(kube_pod_container_resource_limits{resource="nvidia_com_gpu", namespace="runai-team-c"}'
        ' * on (namespace, pod) group_left () (kube_pod_status_phase{phase="Running"} == 1))'
    )

    # At 60 blueprint seconds a wall second team-c's pods run for seconds, so one instant may catch none
    # running: the claim holds over the scenario's whole window, and the window must show some running.
    def peak() -> list[float]:
        window = f"max_over_time(({allocated})[{int(time.time() - started) + 30}s:5s])"
        return [s.value for s in promql.query(PROMETHEUS, window) if s.value > 0]

    assert wait_for(peak, 120, "team-c's pods running")[0] <= runai.quota("team-c", "default").gpu


def test_preemption_storm_reclaims_from_the_over_quota_project(runai: RunaiBlueprint) -> None:
    _up("preemption-storm")
    evicted = 'sum(kai_pod_group_evicted_pods_total{action="reclaim", namespace="runai-team-a"})'
    wait_for(
        lambda: [s for s in promql.query(PROMETHEUS, evicted) if s.value >= 10], 120, "reclaim evictions"
    )
    evicts = wait_for(lambda: [e for e in _events(runai) if e["reason"] == "Evict"], 60, "Evict events")
    assert all(e["involvedObject"]["kind"] == "PodGroup" for e in evicts)
    reclaimed = [e for e in evicts if " was preempted by workload runai-team-b/" in str(e["message"])]
    assert reclaimed and all(str(e["message"]).startswith("Pod runai-team-a/") for e in reclaimed)
    # The Job controller replaces a reclaimed pod (KAI marks it DisruptionTarget, which the Job's pod
    # failure policy ignores): a reclaimed borrower's Job gets a second pod and does not fail.
    victim = str(reclaimed[0]["message"]).split()[1].split("/")[1].rsplit("-", 1)[0]

    def recreated() -> list[dict[str, Any]]:
        return [
            e
            for e in _events(runai)
            if e["reason"] == "SuccessfulCreate" and e["involvedObject"]["name"] == victim
        ]

    assert (
        len(wait_for(lambda: len(recreated()) >= 2 and recreated(), 60, f"a new pod for Job {victim}")) >= 2
    )
    job = _client(runai).get(Client.path("Job", "runai-team-a", victim))
    assert not any(
        c["type"] == "Failed" and c["status"] == "True"
        for c in job.get("status", {}).get("conditions", []) or []
    )
