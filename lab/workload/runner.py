"""Running a plan against a live lab: submit on time, cancel as planned, keep the job-classes file.

:func:`run` is blocking and stoppable: the CLI calls it in the foreground (``lab workload run``), and
the same function runs in the background as the lab's live mode (a thread with a ``stop`` event, fed
the endless ``Model.jobs(seed)``). Time is compressed by ``time_scale``: a job planned at real second
``t`` is submitted ``t / time_scale`` seconds after the start.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lab.dcgm.shim import JobClassesWriter
from lab.workload.plan import PlannedJob, lab_limit_minutes
from lab.workload.submit import NodeShape, SubmitError, refused_field
from lab.workload.summary import RunSummary, base_state, duration, summarise

# Final Slurm states (sacct's), after which a job holds no GPUs.
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE"}  # fmt: skip


class Submitter(Protocol):
    """A way into Slurm as the plan's users: pyslurm (lab.workload.pyslurm_client) or slurmrestd
    (lab.workload.submit). Each raises SubmitError, with Slurm's reason and the fix, for what fails."""

    path: str  # "pyslurm" | "slurmrestd", as the runner's messages name it

    def description(
        self, job: PlannedJob, time_scale: float, shape: NodeShape, output_dir: str, seed: int
    ) -> dict[str, Any]: ...

    def submit(self, user: str, description: dict[str, Any]) -> int: ...

    def cancel(self, user: str, job_id: int) -> None: ...

    def states(self, user: str) -> dict[int, str]: ...

    def start_time(self, user: str, job_id: int) -> float | None: ...

    def accounting(self, user: str, since_epoch: float) -> dict[int, dict[str, Any]]: ...

    def close(self) -> None: ...


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def epoch(self) -> float: ...

    def wait(self, seconds: float, stop: threading.Event) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def epoch(self) -> float:
        return time.time()

    def wait(self, seconds: float, stop: threading.Event) -> None:
        stop.wait(max(0.0, seconds))  # returns at once when the run is stopped


@dataclass
class RunOptions:
    observer: str = "root"  # who reads job states and accounting
    poll_s: float = 1.0  # lab seconds between job-state polls while a planned cancel awaits its start
    idle_poll_s: float = 5.0  # otherwise (each poll is one job-state RPC in sdiag, signals/workload.md)
    drain: bool = True  # after the last submission, wait until every job has ended
    drain_timeout_s: float | None = None  # lab seconds; default: the longest limit + 2 min
    accounting_timeout_s: float = 60.0  # wait this long for slurmdbd to record the last jobs
    output_dir: str = "/tmp"  # on the nodes: workload-<job id>.out
    retain_classes_s: float = 300.0  # ended jobs stay in the job-classes file this long (MinJobAge)
    progress_every_s: float = 5.0
    max_consecutive_rejections: int = 5
    max_consecutive_errors: int = 10  # failed polls or cancels (each already retried) before giving up


@dataclass
class _Tracked:
    job: PlannedJob
    job_id: int
    state: str = "PENDING"
    cancel_at: float | None = None  # lab seconds since the start
    ended_at: float | None = None
    cancelled: bool = False


def run(
    jobs: Iterable[PlannedJob],
    client: Submitter,
    *,
    time_scale: float,
    shape: NodeShape,
    seed: int,
    planned: int | None = None,
    stop: threading.Event | None = None,
    job_classes: Path | None = None,
    options: RunOptions | None = None,
    progress: Callable[[str], None] | None = None,
    clock: Clock | None = None,
    trace_queue: tuple[float, float] | None = None,
) -> RunSummary:
    """Submit ``jobs`` at their compressed times until they run out or ``stop`` is set.

    Planned cancellations go through Slurm's own cancel when the job has run its planned time (at
    once when the run is stopped, so no job outlives its plan); ``job_classes`` is kept current; the
    summary is read back from slurmdbd. ``trace_queue`` is the trace's (median, mean) queue wait in
    real seconds, shown beside Slurm's.
    """
    runner = _Runner(
        client,
        time_scale=time_scale,
        shape=shape,
        seed=seed,
        stop=stop or threading.Event(),
        classes=JobClassesWriter(job_classes) if job_classes else None,
        options=options or RunOptions(),
        say=progress or (lambda _message: None),
        clock=clock or SystemClock(),
    )
    runner.loop(jobs, planned)
    return runner.summary(planned, trace_queue)


class _Runner:
    def __init__(
        self,
        client: Submitter,
        *,
        time_scale: float,
        shape: NodeShape,
        seed: int,
        stop: threading.Event,
        classes: JobClassesWriter | None,
        options: RunOptions,
        say: Callable[[str], None],
        clock: Clock,
    ) -> None:
        self.client, self.scale, self.shape, self.seed = client, time_scale, shape, seed
        self.stop, self.classes, self.options, self.say, self.clock = stop, classes, options, say, clock
        self.tracked: dict[int, _Tracked] = {}
        self.rejections: list[str] = []
        self.rejected_in_a_row = 0
        self.errors_in_a_row = 0
        self.longest_limit_s = 0.0
        self.start = clock.monotonic()
        self.start_epoch = clock.epoch()

    def now(self) -> float:
        return self.clock.monotonic() - self.start

    def loop(self, jobs: Iterable[PlannedJob], planned: int | None) -> None:
        upcoming = iter(jobs)
        next_job = next(upcoming, None)
        all_submitted_at: float | None = None
        last_poll = -math.inf
        next_report = 0.0
        while not self.stop.is_set():
            now = self.now()
            while next_job is not None and next_job.submit_s / self.scale <= now and not self.stop.is_set():
                self._submit(next_job)
                next_job = next(upcoming, None)
            if next_job is None and all_submitted_at is None:
                all_submitted_at = now
            # Recomputed every turn: a newly submitted job planned to be cancelled shortens it.
            next_poll = last_poll + self._poll_interval(draining=all_submitted_at is not None)
            if now >= next_poll:
                self._poll()
                last_poll = now
                next_poll = now + self._poll_interval(draining=all_submitted_at is not None)
            self._cancel_due()
            if now >= next_report:
                self._report(planned)
                next_report = now + self.options.progress_every_s
            if all_submitted_at is not None:
                if not self.options.drain or not self._active():
                    break
                if now - all_submitted_at > self._drain_timeout():
                    self.say(
                        f"stopped waiting for {len(self._active())} jobs after {self._drain_timeout():.0f} s"
                    )
                    break
            wake = [next_poll, *(t.cancel_at for t in self._active() if t.cancel_at is not None)]
            if next_job is not None:
                wake.append(next_job.submit_s / self.scale)
            self.clock.wait(min(wake) - self.now(), self.stop)
        if self.stop.is_set():
            self._cancel_planned_cancellations()
        self._poll()
        self._report(planned)
        self._write_classes(retain_s=0.0)  # the runner is leaving: keep only jobs that still hold GPUs

    def _submit(self, job: PlannedJob) -> None:
        description = self.client.description(job, self.scale, self.shape, self.options.output_dir, self.seed)
        try:
            job_id = self.client.submit(job.user, description)
        except SubmitError as error:
            field = refused_field(str(error))
            named = f", field {field}={getattr(job, field)!r}" if field else ""
            refusal = f"plan job {job.index} ({job.user}/{job.account}{named}): {error}"
            self.rejections.append(refusal)
            self.rejected_in_a_row += 1
            self.say(f"{self.client.path} refused {refusal}")
            if self.rejected_in_a_row >= self.options.max_consecutive_rejections:
                raise SubmitError(
                    f"{self.rejected_in_a_row} submissions in a row were rejected; the last: {error}"
                ) from error
            return
        self.rejected_in_a_row = 0
        self.tracked[job_id] = _Tracked(job, job_id)
        self.longest_limit_s = max(self.longest_limit_s, lab_limit_minutes(job.time_limit_s, self.scale) * 60)
        self.say(
            f"submitted job {job_id}: {job.workload_class}, {job.user}/{job.account}, {job.gpus} GPU on "
            f"{job.partition}, planned {job.outcome} after {duration(job.duration_s)} real"
        )
        self._write_classes()

    def _tolerate(self, what: str, error: SubmitError) -> None:
        """A poll or cancel that failed after its retries: said, and tried again on the next turn;
        only a run of them stops the run (a live workload should outlast a slurmctld restart)."""
        self.errors_in_a_row += 1
        self.say(f"{what} failed ({self.errors_in_a_row} in a row): {error}")
        if self.errors_in_a_row >= self.options.max_consecutive_errors:
            raise SubmitError(
                f"{self.errors_in_a_row} {self.client.path} calls in a row failed; the last: {error}"
            )

    def _poll(self) -> None:
        if not self._active():
            return
        try:
            self._poll_states()
        except SubmitError as error:
            self._tolerate("polling job states", error)
        else:
            self.errors_in_a_row = 0

    def _poll_states(self) -> None:
        states = self.client.states(self.options.observer)
        now = self.now()
        for tracked in self._active():
            # A job slurmctld no longer holds was purged after MinJobAge: it has ended.
            state = states.get(tracked.job_id, "ENDED")
            if tracked.state == "PENDING" and state == "RUNNING" and tracked.job.outcome == "cancelled":
                started = self.client.start_time(self.options.observer, tracked.job_id)
                # The user cancels once the job has run its planned time, counted from Slurm's start.
                ran = self.clock.epoch() - (started or self.clock.epoch())
                tracked.cancel_at = now + max(0.0, tracked.job.duration_s / self.scale - ran)
            tracked.state = state
            if state in TERMINAL or state == "ENDED":
                tracked.ended_at, tracked.cancel_at = now, None
        self._write_classes()

    def _poll_interval(self, draining: bool) -> float:
        """Poll often only when it matters: a planned cancel counts from its job's start, and the
        end of a drained run is noticed promptly; otherwise the endings only age the classes file."""
        awaiting_start = any(t.job.outcome == "cancelled" and t.state == "PENDING" for t in self._active())
        return self.options.poll_s if awaiting_start or draining else self.options.idle_poll_s

    def _cancel_due(self) -> None:
        now = self.now()
        for tracked in self._active():
            if tracked.cancel_at is not None and now >= tracked.cancel_at and self._cancel(tracked):
                ran = duration(tracked.job.duration_s)
                self.say(f"cancelled job {tracked.job_id}: it ran its planned {ran} real")

    def _cancel_planned_cancellations(self) -> None:
        for tracked in self._active():
            if tracked.job.outcome == "cancelled":
                self._cancel(tracked)

    def _cancel(self, tracked: _Tracked) -> bool:
        """Slurm's cancel, as the job's owner; False (and another try a poll interval later) on failure."""
        if not tracked.cancelled:
            try:
                self.client.cancel(tracked.job.user, tracked.job_id)
            except SubmitError as error:
                tracked.cancel_at = self.now() + self.options.poll_s
                self._tolerate(f"cancelling job {tracked.job_id}", error)
                return False
            self.errors_in_a_row = 0
        tracked.cancelled, tracked.cancel_at = True, None
        return True

    def _active(self) -> list[_Tracked]:
        return [t for t in self.tracked.values() if t.ended_at is None]

    def _drain_timeout(self) -> float:
        if self.options.drain_timeout_s is not None:
            return self.options.drain_timeout_s
        # Slurm enforces limits on a 30 s cycle and waits KillWait (30 s) before SIGKILL.
        return self.longest_limit_s + 120

    def _write_classes(self, retain_s: float | None = None) -> None:
        if self.classes is None:
            return
        now = self.now()
        keep_s = self.options.retain_classes_s if retain_s is None else retain_s
        self.classes.write(
            {
                str(t.job_id): t.job.workload_class
                for t in self.tracked.values()
                if t.ended_at is None or now - t.ended_at < keep_s
            }
        )

    def _report(self, planned: int | None) -> None:
        active = self._active()
        running = sum(1 for t in active if t.state == "RUNNING")
        of = f" of {planned}" if planned is not None else ""
        elapsed = self.now()
        self.say(
            f"{duration(elapsed)} in the lab = {duration(elapsed * self.scale)} real: submitted "
            f"{len(self.tracked)}{of}, pending {len(active) - running}, running {running}, "
            f"ended {len(self.tracked) - len(active)}"
        )

    def summary(self, planned: int | None, trace_queue: tuple[float, float] | None) -> RunSummary:
        elapsed = self.now()
        records = self._accounting()
        return summarise(
            {job_id: t.job for job_id, t in self.tracked.items()},
            records,
            time_scale=self.scale,
            lab_elapsed_s=elapsed,
            planned=planned if planned is not None else len(self.tracked) + len(self.rejections),
            rejections=self.rejections,
            trace_queue=trace_queue,
        )

    def _accounting(self) -> dict[int, dict[str, Any]]:
        """slurmdbd's records of our jobs, polled (bounded) until every ended job is recorded as ended."""
        if not self.tracked:
            return {}
        deadline = self.now() + self.options.accounting_timeout_s
        ended = {t.job_id for t in self.tracked.values() if t.ended_at is not None}
        while True:
            records = self.client.accounting(self.options.observer, self.start_epoch - 60)
            ours = {job_id: records[job_id] for job_id in self.tracked if job_id in records}
            if self.now() >= deadline or all(
                job_id in ours and base_state((ours[job_id].get("state") or {}).get("current")) in TERMINAL
                for job_id in ended
            ):
                return ours
            self.clock.wait(min(1.0, deadline - self.now()), threading.Event())
