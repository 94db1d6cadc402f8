"""Submitting jobs through slurmrestd, Slurm's own REST API: the client and the job description.

slurmrestd is the runner's alternative to pyslurm (``lab workload run --submit-via slurmrestd``), for
sites without pyslurm; :mod:`lab.workload.pyslurm_client` is the default. The submitter speaks the
v0.0.42 data parser that slurmrestd 24.11 serves. Request shapes are those of the OpenAPI document the
lab's slurmrestd publishes at ``/openapi/v3`` (``v0.0.42_job_submit_req`` …), each tried against the lab:

* ``POST /slurm/v0.0.42/job/submit`` with ``{"job": {… "script": "#!/bin/bash …"}}`` → ``{"job_id": 8}``
* ``GET /slurm/v0.0.42/jobs/state/`` → ``{"jobs": [{"job_id": "8", "state": ["RUNNING"]}]}``
* ``DELETE /slurm/v0.0.42/job/8`` (scancel) → HTTP 200; per-job errors in ``status[].error``
* ``GET /slurmdb/v0.0.42/jobs/?start_time=…`` (sacct) → accounting records for the summary

Each job is submitted with its planned user's JWT (``X-SLURM-USER-NAME`` + ``X-SLURM-USER-TOKEN``,
from ``scontrol token`` on the controller), so Slurm runs it as that user.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.attach import slurmrestd
from lab.attach.running import RunningLab
from lab.attach.slurmrestd import Credentials, RestError
from lab.blueprint.slurm_blueprint import Blueprint
from lab.workload import jobscript
from lab.workload.plan import PlannedJob, lab_limit_minutes
from lab.workload.summary import base_state, number

API = slurmrestd.API_VERSION  # v0.0.42

Transport = Callable[..., tuple[int, dict[str, Any]]]  # the signature of lab.attach.slurmrestd.request

# SLURM_COMMUNICATIONS_{CONNECTION,SEND,RECEIVE,SHUTDOWN}_ERROR, SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT
# (slurm/slurm_errno.h): slurmctld was unreachable, the request may succeed when retried.
TRANSIENT_SLURM_ERRORS = {1001, 1002, 1003, 1004, 5004}

# Slurm's answer → the plan field it refused and what to change. Matched against Slurm's error text
# (slurm_strerror, as slurmrestd and pyslurm both report it).
_REFUSALS = {
    "Invalid account": (
        "account",
        "the user has no association with that account and partition; check the blueprint's users and "
        "`lab sh controller -- sacctmgr show assoc`",
    ),
    "Invalid qos": (
        "qos",
        "the QOS is not allowed for the user's association; check the blueprint's qos and "
        "`sacctmgr show assoc format=user,qos`",
    ),
    "Invalid partition": (
        "partition",
        "the partition does not exist in the running lab; is it up with this blueprint?",
    ),
    "Requested node configuration is not available": (
        "gpus",
        "the job asks for more GPUs, CPUs or memory per node than a node has; check the blueprint's "
        "node shape",
    ),
    "time limit": (
        "time_limit_s",
        "the time limit exceeds the partition's or QOS's; check max_time and max_wall",
    ),
    "Authentication": (None, "slurmctld rejected the token; `lab token --user NAME` must work"),
}


class SubmitError(RuntimeError):
    """A request slurmrestd refused or could not answer; the message says what and how to fix it."""


@dataclass
class RestClient:
    """slurmrestd with per-user tokens, retries on transient failures, and errors that name the fix."""

    base_url: str
    tokens: Callable[[str], Credentials]  # user → a freshly issued JWT for that user
    transport: Transport = slurmrestd.request
    attempts: int = 5
    backoff_s: float = 0.5
    pause: Callable[[float], None] = time.sleep  # between retries
    refresh_after_s: float = 1800  # tokens are asked for with an hour's lifespan; renew at half-life
    path: str = "slurmrestd"  # how the runner's messages name this way into Slurm
    _cache: dict[str, tuple[float, Credentials]] = field(default_factory=dict, repr=False)

    def description(
        self, job: PlannedJob, time_scale: float, shape: NodeShape, output_dir: str, seed: int
    ) -> dict[str, Any]:
        return job_description(job, time_scale, shape, output_dir, seed)

    def close(self) -> None:
        """Nothing to release: every request is its own HTTP connection."""

    def call(self, user: str, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request, retried while the failure is transient (no connection, HTTP 408/429/502-504,
        slurmctld unreachable); an authentication failure gets one fresh token; Slurm's refusals
        (slurmrestd answers them with HTTP 500 and ``errors[].error_number``) raise at once."""
        refreshed = False
        last = ""
        for attempt in range(self.attempts):
            credentials = self.credentials(user)
            try:
                status, answer = self.transport(self.base_url, path, credentials, method=method, body=body)
            except RestError as error:
                last = str(error)
            else:
                errors = [e for e in answer.get("errors") or [] if isinstance(e, dict)]
                if status == 200 and not errors:
                    return answer
                text = _describe(status, answer)
                if status in (401, 403, 511) or "authentication" in text.lower():
                    # slurmrestd answers an expired or forged JWT with 401, or 511 once slurmctld refuses it.
                    if refreshed:
                        raise SubmitError(
                            f"{method} {path} as {user}: {text}. Fix: {_REFUSALS['Authentication'][1]}"
                        )
                    self._cache.pop(user, None)
                    refreshed = True
                    continue
                if not _transient(status, errors):
                    raise SubmitError(f"{method} {path} as {user}: {text}{fix_for(text)}")
                last = text
            if attempt + 1 < self.attempts:
                self.pause(self.backoff_s * 2**attempt)
        raise SubmitError(
            f"{method} {self.base_url}{path} as {user}: no answer after {self.attempts} attempts ({last}). "
            "Fix: is the lab up? `lab status` shows slurmrestd's URL and the daemons"
        )

    def credentials(self, user: str) -> Credentials:
        """The cached token of ``user``, issued anew at half its lifespan."""
        cached = self._cache.get(user)
        if cached is None or time.monotonic() - cached[0] > self.refresh_after_s:
            cached = (time.monotonic(), self.tokens(user))
            self._cache[user] = cached
        return cached[1]

    def submit(self, user: str, description: dict[str, Any]) -> int:
        answer = self.call(user, "POST", f"/slurm/{API}/job/submit", {"job": description})
        job_id = answer.get("job_id")
        if not isinstance(job_id, int):
            raise SubmitError(f"slurmrestd accepted a job for {user} but returned no job_id: {answer}")
        return job_id

    def cancel(self, user: str, job_id: int) -> None:
        """Slurm's own cancel (scancel): DELETE /slurm/v0.0.42/job/{id}, as the job's owner."""
        answer = self.call(user, "DELETE", f"/slurm/{API}/job/{job_id}")
        for status in answer.get("status") or []:
            error = status.get("error") or {}
            # 2017 "Invalid job id specified" (purged) and 2021 "Job/step already completing or
            # completed": it ended before the cancel arrived; nothing to do.
            if error.get("code") not in (None, 0, 2017, 2021):
                raise SubmitError(f"cancel of job {job_id} as {user}: {error.get('string') or error}")

    def states(self, user: str) -> dict[int, str]:
        """Job id → base state of every job slurmctld still holds (MinJobAge)."""
        answer = self.call(user, "GET", f"/slurm/{API}/jobs/state/")
        return {int(job["job_id"]): base_state(job.get("state")) for job in answer.get("jobs") or []}

    def start_time(self, user: str, job_id: int) -> float | None:
        answer = self.call(user, "GET", f"/slurm/{API}/job/{job_id}")
        jobs = answer.get("jobs") or []
        started = number(jobs[0].get("start_time")) if jobs else None
        return float(started) if started else None

    def accounting(self, user: str, since_epoch: float) -> dict[int, dict[str, Any]]:
        """slurmdbd's records (as ``sacct -S``) of jobs since ``since_epoch``, by job id."""
        query = urllib.parse.urlencode({"start_time": str(int(since_epoch))})
        answer = self.call(user, "GET", f"/slurmdb/{API}/jobs/?{query}")
        return {int(job["job_id"]): job for job in answer.get("jobs") or []}


@dataclass(frozen=True)
class NodeShape:
    """Per-GPU CPU and memory, as sites set DefCpuPerGPU / DefMemPerGPU, so jobs share a node."""

    gpus_per_node: int
    cpus_per_gpu: int
    memory_per_gpu_mb: int

    @classmethod
    def of(cls, blueprint: Blueprint) -> NodeShape:
        shape = blueprint.nodes.shape
        return cls(shape.gpus, shape.cpus // shape.gpus, shape.real_memory_mb // shape.gpus)


def job_description(
    job: PlannedJob, time_scale: float, shape: NodeShape, output_dir: str, seed: int
) -> dict[str, Any]:
    """The v0.0.42 ``job_desc_msg`` for one planned job (what ``sbatch`` would send)."""
    description: dict[str, Any] = {
        "name": job.workload_class,
        "account": job.account,
        "partition": job.partition,
        "qos": job.qos,
        "time_limit": {
            "set": True,
            "infinite": False,
            "number": lab_limit_minutes(job.time_limit_s, time_scale),
        },
        "cpus_per_tres": f"gres/gpu:{shape.cpus_per_gpu}",
        "memory_per_tres": f"gres/gpu:{shape.memory_per_gpu_mb}",
        "current_working_directory": output_dir,
        "standard_output": f"{output_dir}/workload-%j.out",
        "environment": ["PATH=/usr/local/bin:/usr/bin:/bin", f"LAB_WORKLOAD_CLASS={job.workload_class}"],
        "comment": f"aifactory-lab workload seed={seed} job={job.index}",
        "script": jobscript.render(job, time_scale),
    }
    if job.nodes > 1:
        description["nodes"] = str(job.nodes)
        description["tres_per_node"] = f"gres/gpu:{shape.gpus_per_node}"
    else:
        description["tres_per_job"] = f"gres/gpu:{job.gpus}"
    return description


def _describe(status: int, answer: dict[str, Any]) -> str:
    errors = answer.get("errors") or []
    parts = []
    for error in errors:
        if isinstance(error, dict):
            text = error.get("description") or error.get("error") or json.dumps(error)
            if error.get("error") and error.get("error") != text:
                text = f"{error['error']}: {text}"
            parts.append(str(text))
    if not parts:
        parts.append(str(answer.get("raw") or answer)[:300])
    return f"HTTP {status}: " + "; ".join(parts)


def _transient(status: int, errors: list[dict[str, Any]]) -> bool:
    """Worth retrying: a gateway or rate error, or Slurm saying it could not reach slurmctld."""
    if status in (408, 429, 502, 503, 504):
        return True
    if status < 500:
        return False
    if not errors:  # a 5xx without Slurm's error list: slurmrestd itself failed
        return True
    return all(
        error.get("error_number") in TRANSIENT_SLURM_ERRORS
        or any(
            word in str(error.get("error", "")).lower()
            for word in ("temporarily", "timed out", "unable to contact")
        )
        for error in errors
    )


def fix_for(text: str) -> str:
    """``. Fix: …`` for a refusal the lab knows, else nothing."""
    for needle, (_field, fix) in _REFUSALS.items():
        if needle.lower() in text.lower():
            return f". Fix: {fix}"
    return ""


def refused_field(text: str) -> str | None:
    """The planned job's field (a :class:`PlannedJob` attribute) a refusal is about, when it says."""
    for needle, (field_name, _fix) in _REFUSALS.items():
        if needle.lower() in text.lower():
            return field_name
    return None


def connect(lab: RunningLab) -> RestClient:
    """A :class:`RestClient` for the lab's slurmrestd, with per-user tokens signed by its slurmctld."""
    return RestClient(lab.slurmrestd_url, lab.token)
