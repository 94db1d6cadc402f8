"""Drills that break one service daemon: slurmctld, slurmdbd and MariaDB, slurmrestd, the DCGM shim,
Prometheus. Each kills or stops the daemon the way it fails in production (SIGKILL: no clean
shutdown), restores it with the lab's own service command, and checks what must have survived."""

from __future__ import annotations

import time

from lab import contract
from lab.attach import slurmrestd
from lab.drill.probe import JOB_START_S, Probe
from lab.drill.record import Drill, Record

DBD_OUTAGE_S = 120  # "for minutes": accounting is down at least this long
DBD_ALERT = "SlurmDBDNotTakingRecords"  # rules/slurm.yml: a queue held for 2m, then group_wait
DBD_ALERT_WITHIN_S = 240
# The running job of controller-restart: longer than its waits before and after the kill (sdiag read,
# the state saved, slurmctld back, the exporter scraped: about 4 minutes at most), within sbatch's
# --time=10 minutes.
SURVIVOR_S = 540
# slurmctld's full state save comes every PERIODIC_CHECKPOINT, 300 s after its start (lab.versions); its
# background loop checks once a second. Waited for before the drill's jobs, which it would outlast.
FULL_SAVE_S = 310


def controller_restart(probe: Probe, record: Record) -> None:
    record.broken = {f"slurm/controller:{contract.SLURM_EXPORTER_PORT}"}
    if probe.lab.blueprint.slurm.release.restart_needs_full_save and not probe.full_state_saved():
        # Killed before its first full state save, this release would not start again (lab.versions): a
        # site's slurmctld has long made one; a lab's may be minutes old.
        waited = time.monotonic()
        probe.until(probe.full_state_saved, FULL_SAVE_S, "slurmctld's first full state save (assoc_usage)")
        record.notes.append(f"waited {time.monotonic() - waited:.0f} s for slurmctld's first full state save")
    # The drill's jobs are what it asserts about, so neither may change state near the kill on its own:
    # the running job outlives every wait below (cancelled at the end), and the pending one is held
    # (JobHeldUser), so that slurmctld cannot allocate it in the seconds before the kill: an allocation
    # it has not saved comes back PENDING, and the node's slurmd then refuses the job's revoked
    # credential (RELIABILITY.md, controller-restart).
    survivor = probe.submit(1, SURVIVOR_S)
    probe.until(lambda: probe.running(survivor), JOB_START_S, f"job {survivor} running")
    waiting = probe.submit(1, 10, options="--hold")
    changed = time.time()  # the drill's last change to the job state

    def submitted() -> float | None:
        return probe.gauge("slurm_scheduler_jobs_submitted")

    def counted_ours() -> float:
        value = submitted()
        return value if value is not None and value >= 2 else 0.0

    before = probe.until(counted_ours, 60, "sdiag's submitted jobs, exported")
    # SIGKILL loses what slurmctld has not saved yet (a job submitted or started in the last seconds
    # comes back PENDING or not at all): the drill kills it once both jobs are on disk, as they are
    # a few seconds after any change.
    probe.until(lambda: probe.state_saved_after(changed), 60, "slurmctld saving its job state")
    record.notes.append(f"slurmctld saved its job state {time.time() - changed:.1f} s after the last change")
    probe.kill("controller", "slurmctld")
    record.check("slurmctld is gone after SIGKILL", not probe.controller_answers())
    began, restarted = time.monotonic(), time.time()
    probe.daemon("controller", "start", "slurmctld")
    probe.until(probe.controller_answers, 60, "slurmctld answering scontrol ping")
    probe.say(f"slurmctld back in {record.recovered_since(began):.1f} s")
    record.check(
        "the running job survived (StateSaveLocation)", probe.running(survivor), probe.squeue_state(survivor)
    )
    record.check(
        "the job held at the kill is still pending after the restart",
        probe.squeue_state(waiting) == "PENDING",
        probe.squeue_state(waiting),
    )
    probe.slurm(f"scontrol release {waiting}")
    probe.until(lambda: probe.started(waiting), JOB_START_S, f"pending job {waiting} started")
    record.check("the job pending at the kill started once released", True, f"job {waiting}")

    def reset() -> str:
        value = submitted()
        return f"{before:.0f} → {value:.0f}" if value is not None and value < before else ""

    record.check(
        "sdiag's counters reset with the restart (sdiag(1))", True, probe.until(reset, 90, "a reset")
    )
    exporter = f"controller:{contract.SLURM_EXPORTER_PORT}"
    probe.until(
        lambda: probe.scraped_since(exporter, restarted), 60, "the exporter scraped after the restart"
    )
    threads = probe.query("slurm_scheduler_threads")
    value = threads[0].value if threads else 0
    record.check("the exporter reads sdiag again", value > 0, f"slurm_scheduler_threads {value:g}")
    probe.slurm(f"scancel {survivor}")
    probe.until(lambda: probe.ended([survivor, waiting]), 180, "the drill's jobs ended")


def dbd_outage(probe: Probe, record: Record) -> None:
    began_outage, since = time.monotonic(), time.time()
    probe.daemon("dbd", "stop", "slurmdbd")
    probe.daemon("dbd", "stop", "mariadb")
    record.expect(DBD_ALERT)
    try:
        jobs = [probe.submit(1, 10) for _ in range(3)]
        probe.until(lambda: probe.ended(jobs), JOB_START_S + 60, "the drill's jobs finished")

        def dbd_queue() -> float:
            return probe.gauge("slurm_scheduler_dbd_queue_size") or 0

        queued = probe.until(dbd_queue, 60, "the exporter's DBD agent queue growing")
        record.check(
            "slurmctld queues the accounting (slurm_scheduler_dbd_queue_size > 0)", True, f"{queued:.0f}"
        )
        # A site's drill keeps the fault in until the site is told: at least DBD_OUTAGE_S, and until the
        # receiver has the alert (a restore before it would only prove the rule's `for:`).
        probe.until(
            lambda: (
                time.monotonic() - began_outage >= DBD_OUTAGE_S
                and probe.delivered(DBD_ALERT, {}, "firing", since)
            ),
            DBD_ALERT_WITHIN_S,
            f"the outage, until {DBD_ALERT} is delivered",
        )
    finally:
        record.restoring()
        began = time.monotonic()
        probe.daemon("dbd", "start", "mariadb")
        probe.daemon("dbd", "start", "slurmdbd")

    # slurmdbd takes the queued records in order, each job's start before its end: a job can be in
    # sacct as RUNNING for a moment after it ended, so wait for its end record as well.
    def all_accounted() -> dict[str, str]:
        found = probe.job_states(jobs)
        ended = len(found) == len(jobs) and not set(found.values()) & {"PENDING", "RUNNING"}
        return found if ended else {}

    states = probe.until(all_accounted, 120, "the outage's jobs in sacct")
    probe.say(f"accounting caught up in {record.recovered_since(began):.1f} s")
    record.check(
        "every job that ended during the outage is in sacct, COMPLETED",
        all(state == "COMPLETED" for state in states.values()),
        ", ".join(f"{job}={state}" for job, state in sorted(states.items())),
    )
    probe.until(lambda: probe.gauge("slurm_scheduler_dbd_queue_size") == 0, 60, "the DBD queue drained")
    record.check("the DBD agent queue drains to 0", True)


def restd_restart(probe: Probe, record: Record) -> None:
    credentials = probe.lab.token(probe.lab.blueprint.all_users[0].name, 600)
    url = probe.lab.slurmrestd_url

    def pings_up() -> bool:
        try:
            status, body = slurmrestd.ping(url, credentials)
        except (OSError, slurmrestd.RestError):
            return False
        return status == 200 and body["pings"][0]["pinged"] == "UP"

    record.check("slurmrestd answers an authenticated ping before", pings_up())
    probe.kill("restd", "slurmrestd")
    record.check("slurmrestd refuses connections while it is down", not pings_up())
    began = time.monotonic()
    probe.daemon("restd", "start", "slurmrestd")
    probe.until(pings_up, 60, "slurmrestd answering with the token issued before the restart")
    probe.say(f"slurmrestd back in {record.recovered_since(began):.1f} s")
    record.check("a token issued before the restart still works (the JWT key is slurmctld's)", True)


def shim_restart(probe: Probe, record: Record) -> None:
    node = probe.node_with_free_gpus(2)
    target = f"{node}:{contract.DCGM_EXPORTER_PORT}"
    record.broken = {f"dcgm/{target}"}
    job = probe.submit(2, 120, options=f"--nodelist={node}")
    probe.until(lambda: probe.running(job), JOB_START_S, f"job {job} running on {node}")
    _, gpus = probe.job_nodes_gpus(job)

    def labelled() -> list[int]:
        series = probe.query(f'DCGM_FI_DEV_GPU_UTIL{{instance="{target}",hpc_job="{job}"}}')
        return sorted(int(s.labels["gpu"]) for s in series)

    probe.until(lambda: labelled() == gpus, 60, f"hpc_job={job} on GPUs {gpus} of {node}")
    probe.check(node, "pkill -KILL -f '^python3 -m lab.dcgm'")
    record.check("the shim is gone after SIGKILL", not probe.answers_http(node, contract.DCGM_EXPORTER_PORT))
    began, restarted = time.monotonic(), time.time()
    probe.daemon(node, "start", "dcgm-shim")
    probe.until(lambda: probe.answers_http(node, contract.DCGM_EXPORTER_PORT), 30, "the shim answering")
    probe.say(f"the shim answers again after {record.recovered_since(began):.1f} s")
    probe.until(lambda: probe.scraped_since(target, restarted), 60, f"{target} scraped again")
    record.check(
        "after the restart the job's GPUs, and only they, carry hpc_job (read from the mapping files)",
        labelled() == gpus,
        f"job {job}: GPUs {labelled()} labelled, {gpus} allocated",
    )
    probe.slurm(f"scancel {job}")
    probe.until(lambda: probe.ended([job]), 60, f"job {job} ended")


def prometheus_restart(probe: Probe, record: Record) -> None:
    record.broken = {"*"}  # every target has a gap while Prometheus is down
    killed_at = time.time()
    before = probe.up_samples(killed_at - 300, killed_at)
    count_before = sum(len(points) for points in before.values())
    probe.check("prometheus", "pkill -KILL -x prometheus")
    began = time.monotonic()
    probe.daemon("prometheus", "start", "prometheus")
    probe.until(probe.prometheus_ready, 120, "Prometheus answering queries (WAL replayed)")
    probe.say(f"Prometheus back in {record.recovered_since(began):.1f} s")
    after = probe.up_samples(killed_at - 300, killed_at)
    count_after = sum(len(points) for points in after.values())
    record.check(
        "no sample from before the kill is lost (the TSDB's WAL survived SIGKILL)",
        count_before > 0 and count_after >= count_before,
        f"{count_after} of {count_before} `up` samples of the 5 minutes before the kill",
    )
    probe.until(
        lambda: probe.query("count(up == 1 and time() - timestamp(up) < 30)"),
        60,
        "every target scraped again",
    )


DRILLS = [
    Drill(
        "controller-restart",
        "slurmctld killed (SIGKILL) mid-workload, then started",
        controller_restart,
        1.5,
        "none: slurmctld is back within a second, far under SlurmControllerNotAnswering's minute",
        room=2,
    ),
    Drill(
        "dbd-outage",
        f"slurmdbd, then MariaDB stopped while jobs finish: {DBD_OUTAGE_S // 60} minutes at least, until the"
        " alert is delivered",
        dbd_outage,
        3.5,
        f"{DBD_ALERT} (the DBD agent queue held for 2 minutes)",
        room=3,
    ),
    Drill(
        "restd-restart",
        "slurmrestd killed (SIGKILL), then started",
        restd_restart,
        0.3,
        "none: slurmrestd is back within a second, and Slurm 24.11's slurmrestd serves no metrics to scrape",
    ),
    Drill(
        "shim-restart",
        "the DCGM shim of one node killed (SIGKILL) under a job, then started",
        shim_restart,
        1,
        "none: the node's target misses a scrape or two, under TargetDown's minute",
        room=2,
    ),
    Drill(
        "prometheus-restart",
        "Prometheus killed (SIGKILL), then started on its TSDB",
        prometheus_restart,
        1,
        "none: a Prometheus cannot tell of its own outage (a watcher outside it can); after it, an alert"
        " with a `for:` under --rules.alert.for-grace-period (10m) is pending again for its `for:`",
    ),
]
