"""The journeys on the Slurm lab, end to end: a fault the lab injects as it happens on a real cluster,
the alert the project's rules fire on it delivered through the real Alertmanager to the lab's
receiver with the job, node and GPU it concerns, every step of the walk in docs/journeys.md returning
exactly the cause, and every panel of the journey's dashboard answering while the fault is in. Each
test clears its fault and waits for the alert to resolve."""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from testinfra.host import Host

from lab import promql
from lab.alerts.listing import Delivered
from lab.attach import fault_record
from lab.blueprint.slurm_blueprint import Blueprint

from .conftest import (
    delivered,
    logsql,
    run_lab,
    running_job_gpus,
    silent_panels,
    submit_gpu_job,
    unix_time,
    wait_for,
)

pytestmark = pytest.mark.lab

# A 4-GPU job, as the journey's document has it: a multi-GPU job fails as a whole when one GPU does.
JOB_GPUS = 4
FAULTED_XID = 79  # "GPU has fallen off the bus": the XID the health check drains for, sticky until reset
# Fault to delivery: a 15 s scrape, a 15 s evaluation, no `for:`, then Alertmanager's group_wait.
DELIVERY_TIMEOUT_S = 150
# Fault to the central alert: the site's scrape and evaluation (30 s), the gateway's read and send
# (10 s), the centre's latency offset (-search.latencyOffset, 30 s, which vmalert's -rule.evalDelay
# follows) and its 15 s evaluation, with margin.
CENTRAL_TIMEOUT_S = 180


@dataclass(frozen=True)
class Faulted:
    job: str
    node: str
    gpu: str
    gpus: set[str]
    injected_at: float


def _prometheus(lab: Blueprint) -> str:
    return f"http://127.0.0.1:{lab.ports.prometheus}"


def _firing(notification: Delivered, alertname: str) -> list[dict[str, dict[str, str]]]:
    """The alerts of ``alertname`` a notification says are firing (it may also carry alerts of its
    group that resolved since the group's last notification)."""
    return [
        a
        for a in notification.alerts
        if a["labels"].get("alertname") == alertname and a["status"] == "firing"
    ]


def _alert(notification: Delivered, alertname: str) -> dict[str, str]:
    (alert,) = _firing(notification, alertname)
    labels: dict[str, str] = alert["labels"]
    return labels


def _holders_in_central_logs(lab: Blueprint, uuid: str, start: float, end: float) -> list[str]:
    """The jobs that held the GPU ``uuid`` (the central alert's `UUID`) between ``start`` and ``end``,
    by the Prolog and Epilog lines at the centre's log store (docs/journeys.md, "From the centre"), in
    the order they started."""
    query = f"prog:=dcgm-job-mapping uuids:~{json.dumps(uuid)} _time:1h | sort by (_time)"
    runs: dict[str, dict[str, float]] = {}
    for line in logsql(f"http://127.0.0.1:{lab.ports.central_logs}", query):
        runs.setdefault(line["job_id"], {})[line["action"]] = unix_time(line["_time"])
    started = sorted(runs.items(), key=lambda item: item[1].get("prolog", end))
    return [job for job, run in started if run.get("prolog", end) <= end and run.get("epilog", end) >= start]


def _central_alert(lab: Blueprint, alertname: str, faulted: Faulted, within_s: float) -> dict[str, Any]:
    """The centre's ``alertname`` firing for the faulted node (vmalert's /api/v1/alerts), once; prints
    the delay from the fault to its activation at the centre (BENCHMARKS.md)."""
    vmalert = f"http://127.0.0.1:{lab.ports.central_alerts}"

    def firing() -> list[dict[str, Any]]:
        return [
            a
            for a in promql.alerts(vmalert)
            if a["labels"].get("alertname") == alertname
            and a["labels"].get("Hostname") == faulted.node
            and a["state"] == "firing"
        ]

    (alert,) = wait_for(firing, within_s, f"{alertname} firing at the centre")
    # BENCHMARKS.md: seen firing (polled every 0.5 s), and the data time its condition first held
    # (vmalert's activeAt: the evaluation's time, -rule.evalDelay behind the clock).
    seen, since = time.time() - faulted.injected_at, unix_time(alert["activeAt"]) - faulted.injected_at
    print(f"{alertname} firing at the centre {seen:.1f} s after the fault (active from {since:.1f} s)")
    # No job id and no holder cross the fence: the centre names the site, node and GPU only.
    assert not {"hpc_job", "pod", "namespace", "container"} & set(alert["labels"]), alert
    assert (alert["labels"]["cluster"], alert["labels"]["gpu"]) == (lab.slurm.cluster_name, faulted.gpu)
    return alert


@contextmanager
def _fault_on_a_running_job(
    controller: Host,
    lab: Blueprint,
    *,
    gpu_rank: int,
    ready: Callable[[str], str],
    ready_what: str,
    fault: tuple[str, ...],
    clear: tuple[str, ...],
    alertname: str,
) -> Iterator[Faulted]:
    """A running 4-GPU job; once Prometheus answers ``ready(job)`` for each of its GPUs, `lab fault
    <fault…> <node> <gpu>` on its GPU of rank ``gpu_rank``. Afterwards the fault is cleared (`lab fault`
    records both), the job cancelled and ``alertname`` resolved and delivered."""
    job = submit_gpu_job(controller, f"--gres=gpu:{JOB_GPUS}", 600, time_limit_min=12)
    node, gpus = running_job_gpus(controller, job)
    gpu = sorted(gpus, key=int)[gpu_rank]
    prometheus = _prometheus(lab)
    wait_for(lambda: len(promql.query(prometheus, ready(job))) == JOB_GPUS, 120, f"job {job}: {ready_what}")
    injected_at = time.time()
    run_lab("fault", fault[0], node, gpu, *fault[1:], "--lab", lab.name)
    try:
        yield Faulted(job, node, gpu, gpus, injected_at)
    finally:
        cleared_at = time.time()
        run_lab("fault", clear[0], node, gpu, *clear[1:], "--lab", lab.name)
        controller.run(f"scancel {job}")
        controller.run(f"scontrol update NodeName={node} State=RESUME")  # a drained node, if it was
        wait_for(
            lambda: delivered(lab.name, alertname, "resolved", cleared_at),
            DELIVERY_TIMEOUT_S,
            f"{alertname} resolved and delivered",
        )


@pytest.fixture
def xid_on_a_running_job(host: Callable[[str], Host], default_lab: Blueprint) -> Iterator[Faulted]:
    """An XID 79 on the third GPU of a running 4-GPU job. As on a cluster, the job has run for a scrape
    and an evaluation before its GPU falls off the bus: the rules have seen it on its GPUs (a job that
    faults before any scrape saw it cannot be named)."""
    with _fault_on_a_running_job(
        host("controller"),
        default_lab,
        gpu_rank=2,
        ready=lambda job: f'hpc_job:dcgm_gpu:last_seen_timestamp_seconds{{hpc_job="{job}"}}',
        ready_what="seen on its GPUs",
        fault=("xid", str(FAULTED_XID)),
        clear=("xid", "0"),
        alertname="GPUXIDError",
    ) as faulted:
        yield faulted


def test_failed_job_gpu_fault_alert_names_the_job_node_and_gpu_and_the_walk_reaches_the_cause(
    xid_on_a_running_job: Faulted, default_lab: Blueprint, host: Callable[[str], Host]
) -> None:
    faulted, prometheus, controller = xid_on_a_running_job, _prometheus(default_lab), host("controller")
    found = wait_for(
        lambda: delivered(default_lab.name, "GPUXIDError", "firing", faulted.injected_at),
        DELIVERY_TIMEOUT_S,
        "GPUXIDError delivered to the receiver",
    )
    first = found[-1]  # newest first: the first delivery is the last of the list
    seconds = unix_time(first.received_at) - faulted.injected_at
    print(f"GPUXIDError delivered {seconds:.1f} s after the fault")  # BENCHMARKS.md: fault to delivery
    labels = _alert(first, "GPUXIDError")
    assert (labels["hpc_job"], labels["Hostname"], labels["gpu"]) == (faulted.job, faulted.node, faulted.gpu)
    assert (labels["err_code"], labels["err_msg"], labels["severity"]) == (
        str(FAULTED_XID),
        "GPU has fallen off the bus",
        "critical",
    )

    # Walk, step 1: the latched XID names exactly this job, node and GPU.
    latched = promql.query(prometheus, "hpc_job:dcgm_gpu_xid:latched")
    assert [(s.labels["hpc_job"], s.labels["Hostname"], s.labels["gpu"]) for s in latched] == [
        (faulted.job, faulted.node, faulted.gpu)
    ]
    # Step 2: every GPU the job held.
    held_query = f'last_over_time(DCGM_FI_DEV_XID_ERRORS{{hpc_job="{faulted.job}"}}[1h])'
    held = promql.query(prometheus, f"group by (Hostname, gpu, UUID) ({held_query})")
    assert {(s.labels["Hostname"], s.labels["gpu"]) for s in held} == {
        (faulted.node, g) for g in faulted.gpus
    }
    # Step 3: the node's drain, as the Slurm exporter shows it (polled: the check runs every 30 s).
    reason = f"XID {FAULTED_XID} GPU has fallen off the bus on GPU {faulted.gpu} [dcgm-xid-check]"

    def drained() -> list[promql.Series]:
        return promql.query(prometheus, f'slurm_node_drain_reason_info{{node="{faulted.node}"}}')

    series = wait_for(drained, 90, f"the drain of {faulted.node} in the exporter's series")
    assert [s.labels["reason"] for s in series] == [reason]
    # Step 4: the controller's lines for the job and the node.
    ctld = controller.check_output(
        f"grep -E 'JobId={faulted.job}( |$)|node {faulted.node} ' /var/log/slurm/slurmctld.log"
    )
    # The main scheduler's allocation, or the backfill scheduler's when its cycle came first (both
    # signals/logs.md); which one starts a job submitted to an idle node is a race between them.
    started = (
        rf"sched: Allocate JobId={faulted.job} NodeList={faulted.node} "
        rf"|sched/backfill: _start_job: Started JobId={faulted.job} in \S+ on {faulted.node}$"
    )
    assert re.search(started, ctld, re.MULTILINE), ctld
    assert f"_job_complete: JobId={faulted.job} WEXITSTATUS 1" in ctld, ctld
    assert f"update_node: node {faulted.node} reason set to: {reason}" in ctld, ctld
    # Step 5: the node's lines: the mapping script's Epilog for the job and the health check's drain.
    node = host(faulted.node)
    epilog = node.check_output(f"grep 'job_id={faulted.job} ' /var/log/slurm/dcgm-job-mapping.log")
    assert re.search(r"action=epilog .*result=ok", epilog), epilog
    check = node.check_output("grep 'result=xid' /var/log/slurm/dcgm-xid-check.log")
    assert f"result=xid{FAULTED_XID}:gpu{faulted.gpu}:drained" in check, check
    # Step 6: what the program printed, and the accounting record.
    output = node.check_output(f"cat /tmp/lab-test-{faulted.job}.out")
    assert re.search(
        rf"job={faulted.job} gpu={faulted.gpu} xid={FAULTED_XID} RuntimeError: CUDA error", output
    )
    state = controller.check_output(f"sacct -X -n -P -j {faulted.job} -o User,State,ExitCode,NodeList")
    assert state.strip() == f"alice|FAILED|1:0|{faulted.node}"
    # The journey's dashboard: every panel answers while the fault is in.
    assert not silent_panels(prometheus, "journey-failed-job-gpu-fault.json")

    # From the centre (docs/journeys.md): the central alert names the node and GPU, and the XID as its
    # value; the site's Prometheus turns node and GPU into the job.
    central = _central_alert(default_lab, "CentralGPUXIDError", faulted, CENTRAL_TIMEOUT_S)
    assert (central["labels"]["UUID"], float(central["value"])) == (labels["UUID"], FAULTED_XID)
    # The central logs: the last job to start on that node and GPU among those that held it in the minute
    # before the XID's first sample at the centre (the job died of it: its Epilog ran before that sample;
    # a job that ended early in that minute, as a test's job before it did in a CI run, came before it).
    record = f'Hostname_gpu_UUID:DCGM_FI_DEV_XID_ERRORS:max{{Hostname="{faulted.node}", gpu="{faulted.gpu}"}}'
    samples = promql.raw_range(
        f"http://127.0.0.1:{default_lab.ports.central_metrics}", f"{record}[10m]", time.time()
    )
    first_xid = min(float(t) for series in samples for t, v in series["values"] if float(v) != 0)
    holders = _holders_in_central_logs(default_lab, central["labels"]["UUID"], first_xid - 60, first_xid)
    assert holders[-1:] == [faulted.job], holders
    # The site's Prometheus joins node and GPU to the job's series too.
    at_site = f'hpc_job:dcgm_gpu_xid:latched{{Hostname="{faulted.node}", gpu="{faulted.gpu}"}}'
    assert [s.labels["hpc_job"] for s in promql.query(prometheus, at_site)] == [faulted.job]


def _busy_minute(job: str) -> str:
    """The job's GPUs whose last minute holds four samples or more of a computing step (median tensor
    activity of a training step, ~0.33, not the idle or stalled scrapes of a job just started): the
    healthy minute the walk's step 3 compares the fault against."""
    tensor = f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{hpc_job="{job}"}}'
    return f"(count_over_time({tensor}[1m]) >= 4) and (quantile_over_time(0.5, {tensor}[1m]) > 0.2)"


@pytest.fixture
def braked_gpu_of_a_running_job(host: Callable[[str], Host], default_lab: Blueprint) -> Iterator[Faulted]:
    """A power brake on the second GPU of a running 4-GPU job, after a busy minute of the job."""
    with _fault_on_a_running_job(
        host("controller"),
        default_lab,
        gpu_rank=1,
        ready=_busy_minute,
        ready_what="a busy minute on each of its GPUs",
        fault=("throttle", "power-brake"),
        clear=("throttle", "clear"),
        alertname="GPUSlowerThanItsJob",
    ) as faulted:
        yield faulted


def test_slow_job_throttled_gpu_alert_names_the_straggler_and_the_walk_shows_its_job_waiting(
    braked_gpu_of_a_running_job: Faulted, default_lab: Blueprint
) -> None:
    faulted, prometheus = braked_gpu_of_a_running_job, _prometheus(default_lab)
    found = wait_for(
        lambda: delivered(default_lab.name, "GPUSlowerThanItsJob", "firing", faulted.injected_at),
        DELIVERY_TIMEOUT_S + 60,  # a minute of slow scrapes and the rule's `for: 1m` come first
        "GPUSlowerThanItsJob delivered to the receiver",
    )
    first = found[-1]
    seconds = unix_time(first.received_at) - faulted.injected_at
    print(f"GPUSlowerThanItsJob delivered {seconds:.1f} s after the fault")  # BENCHMARKS.md
    labels = _alert(first, "GPUSlowerThanItsJob")
    assert (labels["hpc_job"], labels["Hostname"], labels["gpu"]) == (faulted.job, faulted.node, faulted.gpu)
    assert labels["severity"] == "warning"

    # Walk, step 1: the job's GPUs side by side; only the straggler's highest clock is low (a power
    # brake halves it: 990 MHz, signals/dcgm.md "Throttled GPU").
    selector = f'hpc_job="{faulted.job}"'
    clocks = promql.query(prometheus, f"max by (gpu) (max_over_time(DCGM_FI_DEV_SM_CLOCK{{{selector}}}[1m]))")
    by_gpu = {s.labels["gpu"]: s.value for s in clocks}
    assert set(by_gpu) == faulted.gpus and by_gpu[faulted.gpu] == 990.0, by_gpu
    assert all(mhz == 1980.0 for gpu, mhz in by_gpu.items() if gpu != faulted.gpu), by_gpu
    # Step 2: the cause on the straggler: its board power far below its peers' (a braked GPU draws
    # ~130 W against ~430 W for a GPU that waits for it). Against the peers' median: a waiting peer's
    # minute averages in its stalled steps' idle scrapes, as many as fall in that minute (one peer read
    # 261 W beside 333 and 435 in a run on Slurm 26.05).
    power = promql.query(
        prometheus, f"max by (gpu) (avg_over_time(DCGM_FI_DEV_POWER_USAGE{{{selector}}}[1m]))"
    )
    watts = {s.labels["gpu"]: s.value for s in power}
    peers = statistics.median(w for gpu, w in watts.items() if gpu != faulted.gpu)
    assert watts[faulted.gpu] < 0.5 * peers, watts
    # Step 3: the job waits for it: the other GPUs' busiest tensor activity of the minute is below what
    # the job's own healthy minute showed before the fault (a waiting GPU computes half of each step:
    # ~0.33 → ~0.16). The highest of the minute, as for the clock: stalled steps pull a median of four
    # scrapes down, the minute before the fault's too.
    tensor = f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{selector},gpu!="{faulted.gpu}"}}'
    busiest = f"avg(max_over_time({tensor}[1m]))"
    now = promql.query(prometheus, busiest)
    before = promql.query(prometheus, busiest, at=faulted.injected_at)
    assert now and before and now[0].value < 0.75 * before[0].value, (now, before)
    # The journey's dashboard: every panel answers while the fault is in.
    assert not silent_panels(prometheus, "journey-slow-job-throttled-gpu.json")

    # From the centre (docs/journeys.md): the straggler against the busy GPUs of its node, its clock the
    # alert's value; the site's Prometheus turns node and GPU into the job.
    central = _central_alert(default_lab, "CentralGPUSlowerThanNodePeers", faulted, CENTRAL_TIMEOUT_S)
    assert (central["labels"]["UUID"], float(central["value"])) == (labels["UUID"], 990.0)
    now = time.time()
    assert _holders_in_central_logs(default_lab, central["labels"]["UUID"], now, now) == [faulted.job]
    at_site = f'DCGM_FI_DEV_SM_CLOCK{{Hostname="{faulted.node}", gpu="{faulted.gpu}", hpc_job!=""}}'
    assert {s.labels["hpc_job"] for s in promql.query(prometheus, at_site)} == {faulted.job}


STARVED_NODE = "dgx-003"  # drained for repair and in a maintenance reservation (blueprints/default.yaml)
STARVED_ALERT = "SlurmJobsPendingOnUnavailableNodes"


@pytest.fixture
def job_waiting_for_a_drained_node(
    host: Callable[[str], Host], default_lab: Blueprint, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A GPU job of dave's that asks for the node the blueprint keeps drained: it waits with
    ReqNodeNotAvail until an operator acts. Recorded as a fault (its pending series are new series to
    any window); afterwards cancelled, and settled once Prometheus no longer counts it."""
    controller, prometheus = host("controller"), _prometheus(default_lab)
    state = controller.check_output(f"sinfo --noheader --Node --nodes={STARVED_NODE} --format=%T")
    assert "drain" in state, f"{STARVED_NODE} should be drained by the blueprint's site state, is {state!r}"
    pending = 'user_partition_reason:slurm_queue_pending:sum{user="dave"}'
    with fault_record.fault(default_lab.name, "starved-job", STARVED_NODE, request.node.nodeid) as fault:
        sbatch = (
            f"sbatch --parsable --nodelist={STARVED_NODE} --gres=gpu:8 --time=10 "
            "--output=/tmp/lab-test-%j.out --wrap 'lab-gpu-app --seconds 600'"
        )
        job = str(controller.check_output(f'su - dave -c "{sbatch}"')).strip().split(";")[0]
        try:
            yield job
        finally:
            controller.run(f"scancel {job}")
            wait_for(
                lambda: not promql.query(prometheus, pending), 90, "dave's pending job no longer counted"
            )
            fault.settled = True


def test_slow_job_starved_alert_names_user_partition_and_reason_and_the_walk_reaches_the_drained_node(
    job_waiting_for_a_drained_node: str, default_lab: Blueprint, host: Callable[[str], Host]
) -> None:
    job, prometheus, controller = job_waiting_for_a_drained_node, _prometheus(default_lab), host("controller")
    # The alert's expression holds from the first scrape that counts the job: the alert is pending,
    # with the user, partition and reason code it concerns. Its `for: 15m` is proven by promtool on
    # the captured run (tests/rules/starved-slurm.test.yml), not waited for here.
    alert = f'ALERTS{{alertname="{STARVED_ALERT}", alertstate="pending", user="dave"}}'
    (pending,) = wait_for(lambda: promql.query(prometheus, alert), 120, f"{STARVED_ALERT} pending for dave")
    assert (pending.labels["partition"], pending.labels["reason"]) == ("gpu", "ReqNodeNotAvail"), pending
    assert pending.labels["severity"] == "warning"

    # Walk, step 1: who waits, where and why, by reason code: dave's one job, for an unavailable node.
    waiting = promql.query(prometheus, 'user_partition_reason:slurm_queue_pending:sum{user="dave"} > 0')
    assert [(s.labels["partition"], s.labels["reason"], s.value) for s in waiting] == [
        ("gpu", "ReqNodeNotAvail", 1.0)
    ]
    # Step 2: the job behind the count, with squeue's full reason.
    listed = controller.check_output("squeue --noheader -t PD -u dave -p gpu -o '%i|%u|%P|%r'")
    assert [line.split("|")[:3] for line in listed.splitlines()] == [[job, "dave", "gpu"]], listed
    assert listed.split("|")[3].startswith("ReqNodeNotAvail"), listed
    # Step 3: the node it asked for, and why that node is out: sinfo -R and the exporter agree.
    assert f"ReqNodeList={STARVED_NODE}" in controller.check_output(f"scontrol show job {job}")
    drained = controller.check_output(f"sinfo --noheader -R --nodes={STARVED_NODE} --format=%E")
    (reason,) = promql.query(prometheus, f'slurm_node_drain_reason_info{{node="{STARVED_NODE}"}}')
    assert reason.labels["reason"] == drained.strip(), (reason.labels, drained)
    # The journey's dashboard: every panel answers while the job waits.
    assert not silent_panels(prometheus, "journey-slow-job-starved.json")
