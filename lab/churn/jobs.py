"""Slurm jobs from accounting: which GPU jobs ran when (pure parsing of sacct's output).

The command (run on the controller; :data:`SACCT_FIELDS` is the single source of the field list)::

    SLURM_TIME_FORMAT=%s TZ=UTC sacct -X -n -P -a -D -S <start> -E <end> \\
        -o JobIDRaw,Start,End,State,AllocTRES

``-X`` allocations only, ``-a`` every user, ``-D`` every run of a requeued job, ``%s`` Unix seconds.
A line, as Slurm 24.11.5 prints it in the lab::

    342|1796036381|1796036386|FAILED|billing=14,cpu=14,gres/gpu=1,mem=250000M,node=1

A running job's End is ``Unknown``; a job that never started has Start ``None`` or ``Unknown``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

SACCT_FIELDS = ("JobIDRaw", "Start", "End", "State", "AllocTRES")
_GPU_TRES = re.compile(r"^gres/gpu(?::[^=]+)?=(\d+)$")


class SacctError(ValueError):
    """sacct printed something this parser does not understand; the message quotes the line."""


@dataclass(frozen=True, slots=True)
class SlurmJob:
    job_id: str  # SLURM_JOB_ID, the value the prolog writes into the mapping files
    start: int  # Unix seconds, truncated by Slurm
    end: float  # Unix seconds, truncated; math.inf while running
    state: str
    gpus: int

    @property
    def end_exclusive(self) -> float:
        """Slurm truncates times to the second, so the job ran somewhere in [start, end + 1 s)."""
        return self.end + 1


def sacct_argv(start: str, end: str) -> list[str]:
    return ["sacct", "-X", "-n", "-P", "-a", "-D", "-S", start, "-E", end, "-o", ",".join(SACCT_FIELDS)]


def parse_sacct(text: str) -> list[SlurmJob]:
    """Every run that started and held at least one GPU, in sacct's order."""
    jobs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != len(SACCT_FIELDS):
            raise SacctError(f"line {number}: expected {len(SACCT_FIELDS)} '|'-separated fields: {line!r}")
        job_id, start, end, state, tres = fields
        if start in ("None", "Unknown", ""):
            continue  # never started: no prolog, no mapping file
        gpus = gpus_of(tres)
        if gpus == 0:
            continue
        try:
            started = int(start)
            ended = math.inf if end in ("Unknown", "None", "") else int(end)
        except ValueError:
            raise SacctError(
                f"line {number}: Start/End are not Unix seconds (set SLURM_TIME_FORMAT=%s): {line!r}"
            ) from None
        jobs.append(SlurmJob(job_id, started, ended, state.split(" ")[0], gpus))
    return jobs


def gpus_of(tres: str) -> int:
    """GPUs in an AllocTRES string: ``gres/gpu=N``, else the sum of typed ``gres/gpu:TYPE=N``."""
    plain, typed = None, 0
    for item in tres.split(","):
        match = _GPU_TRES.match(item)
        if match is None:
            continue
        if item.startswith("gres/gpu="):
            plain = int(match.group(1))
        else:
            typed += int(match.group(1))
    return plain if plain is not None else typed


def running_timeline(jobs: list[SlurmJob], start: float, end: float) -> list[tuple[float, int]]:
    """GPU jobs running over [start, end] as (time, count) change points, from exact Start/End.

    Drawn as a step function this shows jobs shorter than a scrape interval too, which evaluations
    every ``step`` seconds would mostly miss.
    """
    changes: dict[float, int] = {}
    for job in jobs:
        if job.gpus == 0 or job.end_exclusive <= start or job.start > end:
            continue
        changes[max(job.start, start)] = changes.get(max(job.start, start), 0) + 1
        if job.end_exclusive <= end:
            changes[job.end_exclusive] = changes.get(job.end_exclusive, 0) - 1
    timeline, running = [(start, 0)], 0
    for t in sorted(changes):
        running += changes[t]
        if t == start:
            timeline[0] = (start, running)
        else:
            timeline.append((t, running))
    timeline.append((end, running))
    return timeline
