"""Drills that break nodes: a node container killed under a job (a host that loses power), XIDs on
several GPUs of several nodes at once, and a burst of jobs through the prolog and epilog."""

from __future__ import annotations

import time
from functools import partial

from lab import contract
from lab.attach.faults import inject_xid
from lab.dcgm.shim import write_injected_xid
from lab.drill.probe import JOB_START_S, DrillError, Probe
from lab.drill.record import Drill, Record

# slurm.conf SlurmdTimeout (the lab keeps Slurm's default, 300 s), plus the ping cycles that notice it.
NODE_DOWN_WITHIN_S = 300 + 180
BOOT_WITHIN_S = 120
XID_STORM = {0: [(1, 79), (2, 79)], 1: [(4, 48)]}  # node index → (GPU, XID): 79 off the bus, 48 DBE
# GPUXIDError has no `for:`: a scrape (15 s), an evaluation (15 s) and Alertmanager's group_wait (10 s).
XID_ALERT_WITHIN_S = 90
BURST_JOBS = 16  # one-GPU jobs, about two thirds of the default lab's 24 GPUs in service
BURST_JOB_S = 20


def node_loss(probe: Probe, record: Record) -> None:
    node = probe.node_with_free_gpus(2)
    host = probe.host_of(node)
    record.broken = {f"dcgm/{node}:{contract.DCGM_EXPORTER_PORT}"}
    job = probe.submit(2, 60, options=f"--nodelist={node}")
    # squeue says RUNNING from the allocation on; the node is lost under a job once its program runs
    # (a node lost during the launch stays "not responding" while slurmctld retries the launch).
    probe.until(
        lambda: probe.run(host, "pgrep -f 'lab-gpu-ap[p] --seconds 60'")[0] == 0, JOB_START_S, "the job"
    )
    mapped = {j for ids in probe.mapping_files(node).values() for j in ids}
    record.check(
        f"job {job} is in {node}'s mapping files before the loss", job in mapped, str(sorted(mapped))
    )
    container = probe.container(host)
    lost = time.monotonic()
    container.kill()
    record.expect("TargetDown", job="dcgm", instance=f"{node}:{contract.DCGM_EXPORTER_PORT}")
    try:
        state, reason = probe.until(lambda: probe.state_if(node, "down"), NODE_DOWN_WITHIN_S, f"{node} DOWN")
        record.notes.append(f"Slurm set {node} {state} {time.monotonic() - lost:.0f} s after the loss")
        record.check(f"Slurm marks {node} DOWN with a reason", bool(reason), f"{state}: {reason}")
        runs = probe.slurm(f"sacct -X -D -n -P -j {job} -o State").split()
        record.check(f"job {job} ended NODE_FAIL (and was requeued)", "NODE_FAIL" in runs, " → ".join(runs))
        down = probe.query(f'up{{instance="{node}:{contract.DCGM_EXPORTER_PORT}"}} == 0')
        record.check(f"{node}'s DCGM target is down in Prometheus", bool(down))
        down_series = f'slurm_node_status{{node="{node}",status=~"down.*"}}'
        exported = probe.until(lambda: probe.query(down_series), 60, f"the exporter showing {node} down")
        shown = exported[0].labels.get("status", "")
        record.check(f"the exporter shows {node} down", True, f"slurm_node_status status={shown}")
    finally:
        record.restoring()
        booted = time.monotonic()
        container.start()
    probe.until(lambda: probe.in_service(node), BOOT_WITHIN_S, f"{node} back in service after its boot")
    probe.say(f"{node} back in service {record.recovered_since(booted):.0f} s after its boot")
    daemons = {name: probe.daemon_running(host, name) for name in ("munged", f"slurmd@{node}", "dcgm-shim")}
    record.check("the boot started munged, slurmd and the shim", all(daemons.values()), str(daemons))
    live = set(probe.slurm(f"squeue -h -w {node} -t RUNNING,COMPLETING -o %i").split())
    stale = {gpu: ids for gpu, ids in probe.mapping_files(node).items() if set(ids) - live}
    record.check("no mapping file holds a job id from before the boot", not stale, str(stale) or "none")
    probe.until(lambda: probe.ended([job]), 240, f"requeued job {job} ended")


def xid_storm(probe: Probe, record: Record) -> None:
    serving = [node for node in probe.lab.blueprint.nodes.names if probe.in_service(node)]
    if len(serving) < len(XID_STORM):
        raise DrillError(f"the storm needs {len(XID_STORM)} nodes in service; {serving} are")
    faults = {str(serving[i]): gpus for i, gpus in XID_STORM.items()}
    logs = {node: _check_log_lines(probe, node) for node in faults}
    began, since = time.monotonic(), time.time()
    for node, gpus in faults.items():
        for gpu, code in gpus:
            inject_xid(probe.lab.blueprint, node, gpu, code, write_injected_xid, by="lab drill xid-storm")
            record.expect("GPUXIDError", Hostname=node, gpu=str(gpu), err_code=str(code))
    try:
        for node, gpus in faults.items():
            _, reason = probe.until(partial(probe.state_if, node, "drain"), 120, f"{node} drained")
            first = gpus[0]
            record.check(
                f"{node} drains with the first faulted GPU's XID as its reason",
                f"XID {first[1]}" in reason and f"on GPU {first[0]}" in reason,
                reason,
            )
        probe.say(f"{len(faults)} nodes drained {time.monotonic() - began:.0f} s after the storm")
        # An XID stays until the GPU is reset, so the faults stay in until the site is told of each:
        # cleared at the drain, a GPU's XID could fall between two scrapes and never reach an alert.
        for want in record.expected:
            told = partial(probe.delivered, want.alert, want.labels, "firing", since)
            probe.until(
                told,
                XID_ALERT_WITHIN_S,
                f"{want.alert} on {want.labels['Hostname']} GPU {want.labels['gpu']}",
            )
        probe.say(f"every XID delivered {time.monotonic() - began:.0f} s after the storm")
    finally:
        record.restoring()
        cleared = time.monotonic()
        for node, gpus in faults.items():
            for gpu, _ in gpus:
                inject_xid(probe.lab.blueprint, node, gpu, 0, write_injected_xid, by="lab drill xid-storm")
    for node in faults:
        probe.until(partial(probe.in_service, node), 120, f"{node} resumed")
    probe.say(f"every node resumed {record.recovered_since(cleared):.0f} s after the faults were cleared")
    record.check("every drained node resumed once its fault was cleared", True, ", ".join(faults))
    for node in faults:  # every health-check run of the storm, from the fault to the resume
        runs = _check_log_lines(probe, node)[len(logs[node]) :]
        drains = sum(":drained " in line for line in runs)
        resumes = sum(" result=resumed " in line for line in runs)
        record.check(
            f"{node} was drained once and resumed once",
            drains == 1 and resumes == 1,
            f"{len(runs)} health-check runs: {drains} drain, {resumes} resume",
        )


def _check_log_lines(probe: Probe, node: str) -> list[str]:
    code, text = probe.run(probe.host_of(node), "cat /var/log/slurm/dcgm-xid-check.log 2>/dev/null")
    return [line for line in text.splitlines() if f"node={node} " in line] if code == 0 else []


def burst(probe: Probe, record: Record) -> None:
    began = time.monotonic()
    jobs = [probe.submit(1, BURST_JOB_S) for _ in range(BURST_JOBS)]
    rate = len(jobs) / (time.monotonic() - began)
    probe.say(f"submitted {len(jobs)} jobs at {rate:.1f} jobs/s")
    record.notes.append(f"{len(jobs)} one-GPU jobs of {BURST_JOB_S} s submitted at {rate:.1f} jobs/s")
    ours = set(jobs)
    allocation: dict[str, tuple[str, list[int]]] = {}
    seen: dict[str, set[tuple[str, str]]] = {job: set() for job in jobs}
    misplaced: list[str] = []
    deadline = time.monotonic() + JOB_START_S + 4 * BURST_JOB_S
    while not probe.ended(jobs):
        if time.monotonic() > deadline:
            raise DrillError(f"the burst's jobs did not end within {deadline - began:.0f} s")
        for job in ours - set(allocation):
            if probe.running(job):
                allocation[job] = probe.job_nodes_gpus(job)
        for node in {node for node, _ in allocation.values()}:
            for gpu, ids in probe.mapping_files(node).items():
                for job in ours & set(ids):
                    seen[job].add((node, gpu))
                    where = allocation.get(job)
                    if where is not None and (where[0] != node or int(gpu) not in where[1]):
                        misplaced.append(f"job {job} in {node}/{gpu}, allocated {where}")
    record.recovered_since(began)
    record.check("no job id appeared in another GPU's mapping file", not misplaced, "; ".join(misplaced[:5]))
    unseen = [job for job in jobs if job in allocation and not seen[job]]
    record.check(
        "every job that was seen running appeared in its GPUs' mapping files",
        not unseen and bool(allocation),
        f"{len(allocation)} of {len(jobs)} seen running; never mapped: {unseen}",
    )
    left = {
        f"{node}/{gpu}": sorted(ours & set(ids))
        for node in {node for node, _ in allocation.values()}
        for gpu, ids in probe.mapping_files(node).items()
        if ours & set(ids)
    }
    record.check("every id left the mapping files when its job ended", not left, str(left) or "none")
    states = probe.job_states(jobs)
    record.check(
        "sacct has every burst job COMPLETED",
        len(states) == len(jobs) and all(s == "COMPLETED" for s in states.values()),
        f"{sum(s == 'COMPLETED' for s in states.values())} of {len(jobs)} COMPLETED",
    )


DRILLS = [
    Drill(
        "node-loss",
        "a node container killed (docker kill) under a job, then started (a power loss and a boot)",
        node_loss,
        11,
        "TargetDown on the node's DCGM target (its shim is gone for SlurmdTimeout and more)",
        fast=False,
        room=2,
    ),
    Drill(
        "xid-storm",
        "XIDs 79 and 48 on three GPUs of two nodes at once, cleared once each is delivered",
        xid_storm,
        2,
        "GPUXIDError for each of the three GPUs, naming node, GPU and XID (the drains end within the"
        " exporter's SlurmNodeWarning 5m)",
    ),
    Drill(
        "burst",
        f"{BURST_JOBS} one-GPU jobs submitted as fast as sbatch returns",
        burst,
        1.5,
        "none: a burst is no fault (the exporter's SlurmJobsPendingHigh wants 500 pending for 15m)",
        room=4,
    ),
]
