"""`mapping-dir-faults`: a node's job-mapping directory goes bad five ways while jobs pass through its
prolog and epilog. Every time: the job completes (a failing Prolog would requeue it and drain the
node), the node stays in service, the script logs the problem on its logfmt line, and the DCGM target
keeps answering (scraped up) as dcgm-exporter 4.5.3-4.8.2 does over the same directory.

* garbage: a file of junk and a GPU file holding a line that is not a job id;
* symlink: a GPU file that is a symlink to /etc/hostname (the script never follows symlinks);
* directory: a directory where a GPU file should be (dcgm-exporter skips directories);
* read-only and full: the script's directory (its config file, as a site sets it) on a read-only
  mount (the lab's shared mount, EROFS) and on a full tmpfs (ENOSPC). An unprivileged container may
  not remount its own directory, so these two move the script's directory, not the shim's.

Only what the drill planted is removed afterwards; ids the live workload's jobs wrote stay.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

from lab import contract
from lab.drill.probe import JOB_START_S, Probe
from lab.drill.record import Drill, Record

CONF = "/etc/slurm/dcgm-job-mapping.conf"
LOG = "/var/log/slurm/dcgm-job-mapping.log"
GARBAGE_LINE = "not-a-job-id"
GPU_NAMES = [str(gpu) for gpu in range(8)]


def _free_gpu_files(probe: Probe, node: str) -> list[str]:
    """GPU file names that hold no job now (absent or empty): where the next job's id will go."""
    files = probe.mapping_files(node)
    gpus = probe.lab.blueprint.nodes.shape.gpus
    return [str(gpu) for gpu in range(gpus) if not files.get(str(gpu))]


def _through_the_prolog(probe: Probe, node: str, record: Record, fault: str, why: str) -> None:
    """One job through the node's prolog and epilog under ``fault``, and what must still hold; the
    prolog's log line must say ``why`` (the error it met and skipped)."""
    host = probe.host_of(node)
    since = time.time()
    job = probe.submit(1, 3, options=f"--nodelist={node}")
    probe.until(lambda: probe.ended([job]), JOB_START_S + 60, f"job {job} through {fault}")
    state = probe.job_states([job]).get(job, "")
    record.check(
        f"{fault}: the job completed (the prolog exited 0)", state == "COMPLETED", f"job {job} {state}"
    )
    node_state, reason = probe.node_state(node)
    record.check(
        f"{fault}: {node} stays in service",
        not node_state.startswith(("drain", "down")),
        f"{node_state} {reason}".strip(),
    )
    lines = [line for line in probe.check(host, f"cat {LOG}").splitlines() if f" job_id={job} " in line]
    record.check(f"{fault}: prolog and epilog each logged one line", len(lines) == 2, f"{len(lines)} lines")
    prolog = next((line for line in lines if " action=prolog " in line), "")
    logged = prolog.split(" result=", 1)[-1]
    record.check(f"{fault}: the prolog logged the problem and went on", why in prolog, f"result={logged}")
    target = f"{node}:{contract.DCGM_EXPORTER_PORT}"
    scraped = probe.until(lambda: probe.scraped_since(target, since), 45, f"{target} scraped under {fault}")
    record.check(f"{fault}: the DCGM target answers (up == 1)", scraped)


def _plant(probe: Probe, node: str, script: str) -> None:
    probe.check(probe.host_of(node), f"cd {shlex.quote(probe.mapping_dir(node))} && {script}")


def _garbage(probe: Probe, node: str, free: list[str]) -> tuple[str, str]:
    lines = " ".join(shlex.quote(name) for name in free)
    plant = f"head -c 512 /dev/urandom >junk && for f in {lines}; do echo {GARBAGE_LINE} >>$f; done"
    # Remove only the planted line: a job of the live workload may have added its id since.
    undo = f"rm -f junk && for f in {lines}; do [ -f $f ] && sed -i '/^{GARBAGE_LINE}$/d' $f; done; true"
    return plant, undo


def _symlink(probe: Probe, node: str, free: list[str]) -> tuple[str, str]:
    names = " ".join(shlex.quote(name) for name in free)
    plant = f"for f in {names}; do rm -f $f; ln -s /etc/hostname $f; done"
    undo = f"for f in {names}; do [ -L $f ] && rm -f $f; done; true"
    return plant, undo


def _directory(probe: Probe, node: str, free: list[str]) -> tuple[str, str]:
    names = " ".join(shlex.quote(name) for name in free)
    plant = f"for f in {names}; do [ -s $f ] || {{ rm -f $f; mkdir $f; }}; done"
    undo = f"for f in {names}; do [ -d $f ] && rmdir $f; done; true"
    return plant, undo


def _moved_directory(
    probe: Probe, node: str, record: Record, fault: str, why: str, directory: str, prepare: str
) -> None:
    """The script's directory set to ``directory`` (after ``prepare``) for one job, then set back."""
    host = probe.host_of(node)
    original = probe.check(host, f"cat {CONF}")
    moved = "\n".join(
        f"DCGM_HPC_JOB_MAPPING_DIR={directory}" if line.startswith("DCGM_HPC_JOB_MAPPING_DIR=") else line
        for line in original.splitlines()
    )
    probe.check(host, prepare)
    try:
        probe.check(host, f"printf '%s\\n' {shlex.quote(moved)} >{CONF}.drill && mv {CONF}.drill {CONF}")
        _through_the_prolog(probe, node, record, fault, why)
    finally:
        probe.check(
            host, f"printf '%s\\n' {shlex.quote(original.rstrip())} >{CONF}.drill && mv {CONF}.drill {CONF}"
        )


# fault → (what plants and removes it, what the prolog logs when it meets it)
FILE_FAULTS: dict[str, tuple[Callable[[Probe, str, list[str]], tuple[str, str]], str]] = {
    "garbage files": (_garbage, f"'{GARBAGE_LINE}' is not a job id"),
    "a planted symlink": (_symlink, "not a regular file"),
    "a directory where a file should be": (_directory, "not a regular file"),
}


def mapping_dir_faults(probe: Probe, record: Record) -> None:
    node = probe.node_with_free_gpus(1)
    for fault, (make, why) in FILE_FAULTS.items():
        free = _free_gpu_files(probe, node)
        plant, undo = make(probe, node, free)
        _plant(probe, node, plant)
        try:
            _through_the_prolog(probe, node, record, fault, why)
        finally:
            _plant(probe, node, undo)
    shared = contract.SHARED_MOUNT
    readonly = f"! touch {shared}/.drill 2>/dev/null"  # EROFS even for root: a read-only bind mount
    _moved_directory(
        probe, node, record, "a read-only file system", "Read-only file system", shared, readonly
    )
    full = contract.DRILL_FULL_MOUNT
    _moved_directory(
        probe,
        node,
        record,
        "a full file system",
        "No space left on device",
        full,
        f"dd if=/dev/zero of={full}/.drill-fill bs=4k 2>/dev/null; test -s {full}/.drill-fill",
    )
    probe.check(probe.host_of(node), f"rm -f {full}/.drill-fill")
    # Recovered: with every fault gone, the next job's id is written to its GPU's file again.
    cleared = time.monotonic()
    job = probe.submit(1, 30, options=f"--nodelist={node}")
    probe.until(
        lambda: any(job in ids for ids in probe.mapping_files(node).values()),
        JOB_START_S,
        f"job {job} mapped",
    )
    probe.say(f"{node} maps jobs again {record.recovered_since(cleared):.1f} s after the faults were removed")
    record.check("with the faults gone, the next job is mapped again", True, f"job {job}")
    probe.slurm(f"scancel {job}")


DRILLS = [
    Drill(
        "mapping-dir-faults",
        "a node's mapping directory with garbage, a symlink, a directory, read-only, full",
        mapping_dir_faults,
        2,
        "none: every job still completes on a node in service; the prolog logs what it skipped (a job"
        " whose GPU file it could not write runs unmapped, which no rule can see)",
        room=1,
    )
]
