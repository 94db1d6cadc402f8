"""The batch script of one planned job: bash that logs, runs for its (compressed) time and ends as planned.

Every line a job writes carries its Slurm job id (logfmt, like the DCGM shim's logs)::

    time=2026-11-30T10:25:03.412Z level=INFO msg="train step" job_id=4711 class=training node=dgx-001 step=3

How each planned outcome ends:

* completed — runs its duration, logs ``job finished``, exits 0;
* failed — runs its duration, then prints the failure of its kind (a Python traceback with a CUDA
  error, CUDA out of memory, an NCCL watchdog timeout, a missing data shard) and exits 1, or dies of
  SIGABRT where the real process aborts;
* cancelled — runs until the submitter cancels it through slurmrestd (Slurm's own cancel);
* timeout — runs until Slurm ends it at its time limit (slurmstepd then logs ``DUE TO TIME LIMIT``).

A SIGTERM (cancel, time limit) is logged and the script exits 143, as a process killed by it would.
"""

from __future__ import annotations

import shlex

from lab.workload.plan import PlannedJob

# Longest gap between two progress lines, in real seconds (at most one line per lab second).
HEARTBEAT_REAL_S = 60.0

_PROGRESS = {
    "training": ('msg="train step"', "step=$i"),
    "inference": ('msg="served requests"', "requests_total=$((i * 240))"),
    "interactive": ('msg="kernel alive"', "idle_s=$((i * 60))"),
}

# kind → (stderr lines, exit status). 134 = killed by SIGABRT (128 + 6), as PyTorch's NCCL watchdog
# aborts the process: the script then really dies of SIGABRT, which Slurm records as FAILED, "0:6".
FAILURES: dict[str, tuple[tuple[str, ...], int]] = {
    "cuda_illegal_address": (
        (
            "Traceback (most recent call last):",
            '  File "/opt/lab/train.py", line 214, in <module>',
            "    main()",
            '  File "/opt/lab/train.py", line 187, in main',
            "    loss.backward()",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ),
        1,
    ),
    "cuda_out_of_memory": (
        (
            "Traceback (most recent call last):",
            '  File "/opt/lab/train.py", line 214, in <module>',
            "    main()",
            '  File "/opt/lab/train.py", line 171, in main',
            "    logits = model(batch)",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            "capacity of 79.11 GiB of which 1.06 GiB is free.",
        ),
        1,
    ),
    "nccl_timeout": (
        (
            "[rank0]:[E ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=4512, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) "
            "ran for 600012 milliseconds before timing out.",
            "[rank0]:[E ProcessGroupNCCL.cpp:1182] [Rank 0] NCCL watchdog thread terminated with exception",
        ),
        134,
    ),
    "python_exception": (
        (
            "Traceback (most recent call last):",
            '  File "/opt/lab/train.py", line 214, in <module>',
            "    main()",
            '  File "/opt/lab/data.py", line 58, in open_shard',
            "    return pq.read_table(path)",
            "FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/shard-00042.parquet'",
        ),
        1,
    ),
}


_SIGNALS = {6: "ABRT", 9: "KILL", 11: "SEGV"}


def heartbeat_s(time_scale: float) -> float:
    """Lab seconds between progress lines."""
    return max(1.0, HEARTBEAT_REAL_S / time_scale)


def render(job: PlannedJob, time_scale: float) -> str:
    """The script text; deterministic (every number is written into it)."""
    beat = heartbeat_s(time_scale)
    message, value = _PROGRESS[job.workload_class]
    lines = [
        "#!/bin/bash",
        f"# aifactory-lab workload (lab/workload/jobscript.py): plan job {job.index}, class "
        f"{job.workload_class}, planned outcome {job.outcome}.",
        f"# Real run time {job.duration_s:.0f} s at time scale {time_scale:g}.",
        "log() {",
        "  printf 'time=%s level=%s %s job_id=%s class=%s node=%s %s\\n' \\",
        '    "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$1" "$2" "$SLURM_JOB_ID" '
        f'{job.workload_class} "${{SLURMD_NODENAME:-$(hostname)}}" "$3"',
        "}",
        'trap \'log WARN "msg=\\"received SIGTERM, stopping\\"" "step=$i"; exit 143\' TERM',
        "i=0",
        'log INFO \'msg="job started"\' "gpus=${SLURM_JOB_GPUS:-none} nodes=${SLURM_JOB_NODELIST:-none}"',
    ]

    def beating(loop: str) -> list[str]:
        return [
            loop,
            f"  sleep {beat:.3f}",
            "  i=$((i + 1))",
            f'  log INFO {shlex.quote(message)} "{value}"',
            "done",
        ]

    if job.outcome in ("cancelled", "timeout"):
        until = "Slurm's cancel" if job.outcome == "cancelled" else "its time limit"
        lines += [f"# Runs until {until} ends it.", *beating("while :; do")]
        return "\n".join(lines) + "\n"
    run_s = job.duration_s / time_scale
    beats = int(run_s // beat)
    rest = run_s - beats * beat
    lines += [*beating(f"while [ $i -lt {beats} ]; do"), f"sleep {rest:.3f}"]
    if job.outcome == "completed":
        lines += ["log INFO 'msg=\"job finished\"' exit_code=0", "exit 0"]
    else:
        trace, code = FAILURES[job.failure or "python_exception"]
        error = trace[-1].replace("'", "")[:200]
        log_error = f"log ERROR {shlex.quote('msg=' + _logfmt_quote(error))}"
        lines += [f"echo {shlex.quote(line)} >&2" for line in trace]
        if code > 128:  # die of the signal itself, without a core file
            signal = _SIGNALS[code - 128]
            lines += [f"{log_error} signal=SIG{signal}", "ulimit -c 0", f"kill -s {signal} $$"]
        else:
            lines += [f"{log_error} exit_code={code}", f"exit {code}"]
    return "\n".join(lines) + "\n"


def _logfmt_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
