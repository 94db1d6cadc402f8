"""Test doubles for the workload: blueprint variants, a clock that jumps, and an in-memory slurmrestd.

``FakeSlurmrestd`` answers the five requests the submitter makes, in the shapes the lab's
slurmrestd 24.11.5 answers them (see fixtures/slurmrestd-24.11.5/), and plays each job out as its
plan says: it starts at submission, ends completed/failed after its compressed run time, times out
at its (whole-minute) limit, and is cancelled only by a DELETE.
"""

from __future__ import annotations

import copy
import math
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lab.attach.slurmrestd import Credentials, RestError
from lab.blueprint.slurm_blueprint import Blueprint, parse
from lab.blueprint.workload_spec import WorkloadSpec
from lab.paths import BLUEPRINTS_DIR
from lab.workload.plan import PlannedJob

FIXTURES = Path(__file__).parent / "fixtures" / "slurmrestd-24.11.5"
EPOCH0 = 1_796_000_000


def shipped_data(name: str = "default") -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((BLUEPRINTS_DIR / f"{name}.yaml").read_text())
    return data


def shipped_spec(name: str = "default", data: dict[str, Any] | None = None) -> WorkloadSpec:
    """The workload section of a shipped blueprint (or of ``data``), validated."""
    workload = parse(data if data is not None else shipped_data(name)).workload
    assert workload is not None
    return workload


def unbounded_blueprint(nodes: int = 256, workload_of: str = "default") -> Blueprint:
    """A shipped workload on a cluster with no limit that cuts the trace's distributions: enough
    GPUs for the largest job of the table, unlimited partitions, a QOS without a wall-time cap."""
    data = shipped_data()
    data["workload"] = shipped_data(workload_of)["workload"]
    data["nodes"]["count"] = nodes
    for partition in data["partitions"]:
        partition["max_time"] = "UNLIMITED"
        partition["nodes"] = "ALL"
    data["qos"] = [{"name": "high", "priority": 100}]
    return parse(data)


def with_workload(data: dict[str, Any], **updates: Any) -> dict[str, Any]:
    """A copy of blueprint ``data`` with dotted workload fields replaced: ``**{"arrivals.peak_hour": 9}``."""
    changed = copy.deepcopy(data)
    for dotted, value in updates.items():
        target = changed["workload"]
        *parents, last = dotted.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[int(last) if last.isdigit() else last] = value
    return changed


class FakeClock:
    """Monotonic and epoch time that advance only when the code under test waits."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        return self.t

    def epoch(self) -> float:
        return EPOCH0 + self.t

    def wait(self, seconds: float, stop: threading.Event) -> None:
        self.t += max(seconds, 0.001)


@dataclass
class FakeJob:
    job_id: int
    user: str
    desc: dict[str, Any]
    plan: PlannedJob | None
    submitted: float
    started: float
    state: str = "RUNNING"
    ended: float | None = None


class FakeSlurmrestd:
    """Call it like ``lab.attach.slurmrestd.request``. ``failures`` are served first, one per request: an
    exception is raised, a ``(status, body)`` is answered."""

    def __init__(self, clock: FakeClock, plan: Iterable[PlannedJob] = (), time_scale: float = 1.0) -> None:
        self.clock = clock
        self.plan = {job.index: job for job in plan}
        self.time_scale = time_scale
        self.jobs: dict[int, FakeJob] = {}
        self.requests: list[tuple[str, str, str]] = []  # (method, path, user)
        self.failures: list[Exception | tuple[int, dict[str, Any]]] = []
        self.valid_tokens: set[str] | None = None  # None: any token is accepted
        self.unavailable_polls = 0  # this many GET jobs/state answer 503 (slurmctld restarting)
        self.next_id = 100

    def __call__(
        self,
        base_url: str,
        path: str,
        credentials: Credentials | None,
        method: str = "GET",
        body: dict[str, Any] | None = None,
        timeout_s: float = 10,
    ) -> tuple[int, dict[str, Any]]:
        user = credentials.user if credentials else ""
        self.requests.append((method, path, user))
        if self.failures:
            failure = self.failures.pop(0)
            if isinstance(failure, Exception):
                raise failure
            return failure
        if credentials is None or (
            self.valid_tokens is not None and credentials.token not in self.valid_tokens
        ):
            return 401, {"errors": [{"error": "Authentication failure", "error_number": 1007}]}
        self._advance()
        if method == "POST" and path == "/slurm/v0.0.42/job/submit":
            return self._submit(user, (body or {})["job"])
        if method == "GET" and path == "/slurm/v0.0.42/jobs/state/" and self.unavailable_polls > 0:
            self.unavailable_polls -= 1
            return 503, {}
        if method == "GET" and path == "/slurm/v0.0.42/jobs/state/":
            return 200, {"jobs": [{"job_id": str(j.job_id), "state": [j.state]} for j in self.jobs.values()]}
        if method == "GET" and path.startswith("/slurmdb/v0.0.42/jobs/"):
            return 200, {"jobs": [self._record(j) for j in self.jobs.values()], "errors": [], "warnings": []}
        match = re.fullmatch(r"/slurm/v0\.0\.42/job/(\d+)", path)
        if match and method == "GET":
            job = self.jobs[int(match.group(1))]
            return 200, {"jobs": [{"job_id": job.job_id, "start_time": _no_val(job.started)}], "errors": []}
        if match and method == "DELETE":
            return self._cancel(int(match.group(1)), user)
        return 404, {"errors": [{"error": f"no fake for {method} {path}"}]}

    def _submit(self, user: str, desc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        index = int(re.search(r"job=(\d+)", desc.get("comment", "")).group(1))  # type: ignore[union-attr]
        self.next_id += 1
        now = self.clock.epoch()
        self.jobs[self.next_id] = FakeJob(self.next_id, user, desc, self.plan.get(index), now, now)
        return 200, {"job_id": self.next_id, "step_id": "batch", "errors": [], "warnings": []}

    def _cancel(self, job_id: int, user: str) -> tuple[int, dict[str, Any]]:
        job = self.jobs.get(job_id)
        if job is None:
            error = {
                "string": "Invalid job id specified",
                "code": 2017,
                "message": "Invalid job id specified",
            }
            return 200, {"status": [{"error": error, "step_id": str(job_id)}], "errors": []}
        if job.user != user:
            error = {
                "string": "Access/permission denied",
                "code": 2002,
                "message": "Access/permission denied",
            }
            return 200, {"status": [{"error": error, "step_id": str(job_id)}], "errors": []}
        if job.ended is not None:
            error = {"string": "Job/step already completing or completed", "code": 2021}
            return 200, {"status": [{"error": error, "step_id": str(job_id)}], "errors": []}
        job.state, job.ended = "CANCELLED", self.clock.epoch()
        return 200, {"status": [], "errors": [], "warnings": []}

    def _advance(self) -> None:
        now = self.clock.epoch()
        for job in self.jobs.values():
            if job.ended is not None or job.plan is None:
                continue
            limit_s = job.desc["time_limit"]["number"] * 60
            if job.plan.outcome in ("completed", "failed"):
                end = job.started + job.plan.duration_s / self.time_scale
                state = "COMPLETED" if job.plan.outcome == "completed" else "FAILED"
            else:
                end, state = job.started + limit_s, "TIMEOUT"
            if now >= end:
                job.state, job.ended = state, end

    def _record(self, job: FakeJob) -> dict[str, Any]:
        return {
            "job_id": job.job_id,
            "state": {"current": [job.state], "reason": "None"},
            "time": {
                "submission": int(job.submitted),
                "start": int(job.started),
                "end": int(job.ended) if job.ended is not None else 0,
            },
            "user": job.user,
        }


def refused(message: str, number: int) -> tuple[int, dict[str, Any]]:
    """How slurmrestd 24.11.5 answers a submission slurmctld refuses (captured from the lab)."""
    error = {"description": "Batch job submission failed", "error_number": number, "error": message}
    return 500, {"errors": [{**error, "source": "slurm_submit_batch_job()"}], "warnings": []}


def unreachable() -> RestError:
    return RestError("POST http://127.0.0.1:6820/slurm/v0.0.42/job/submit: [Errno 111] Connection refused")


def _no_val(value: float) -> dict[str, Any]:
    return {"set": True, "infinite": False, "number": int(value)}


def synthetic_trace(rate: int = 20, thirds: bool = True) -> dict[str, Any]:
    """A synthetic trace for tests, not a plausible one: ``rate`` GPU jobs per GPU per day, 1-8 GPUs,
    runs of 16 s to 34 min independent of size, and (``thirds``) every outcome a third of jobs and of
    GPU time. Consistent by construction: the sizes' GPU time is p·g / mean GPUs, the bins' mean
    (log-uniform, 1.4427 × their lower edges) is the mean run."""
    cdf = [0.0] * 5 + [0.1, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0]  # run ≤ 2^k s
    lower_mean = sum((b - a) * 2 ** (k - 1) for k, (a, b) in enumerate(zip([0.0, *cdf], cdf, strict=False)))
    mean_run = lower_mean / math.log(2)
    sizes = {1: 0.5, 2: 0.25, 4: 0.125, 8: 0.125}
    mean_gpus = sum(g * p for g, p in sizes.items())
    outcome = {"completed": 0.34, "cancelled": 0.33, "failed": 0.33}
    trace = copy.deepcopy(shipped_data()["workload"]["trace"])
    trace.update(
        cluster="test shape",
        gpus=1,
        days=1,
        gpu_jobs=rate,
        gpu_seconds=rate * mean_gpus * mean_run,
        gpus_per_job={"median": 1, "mean": mean_gpus},
        run_s={"median": 128, "mean": mean_run},
        sizes=[{"gpus": g, "jobs": p, "gpu_time": p * g / mean_gpus} for g, p in sizes.items()],
        run_cdf=cdf,
    )
    if thirds:
        trace["outcomes"] = {"by_count": outcome, "by_gpu_time": outcome}
    return trace


def busy_blueprint(rate: int = 20) -> Blueprint:
    """The default lab with a test-only workload: busy, and every outcome frequent. Not plausible;
    for exercising the runner (and the lab test) in seconds."""
    data = with_workload(shipped_data(), trace=synthetic_trace(rate), timeout_share_of_failed=0.5)
    return parse(data)
