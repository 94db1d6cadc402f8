"""Submitting jobs through pyslurm, the runner's default way: the client and the job description.

The runner (:mod:`lab.workload.runner`) speaks to a :class:`PyslurmClient` exactly as to the slurmrestd
:class:`~lab.workload.submit.RestClient`: ``submit``, ``cancel``, ``states``, ``start_time`` and
``accounting``. Each call goes to an agent (:mod:`lab.workload.pyslurm_agent`) in the controller that
runs as the call's user, one long-lived ``docker exec -i -u <user>`` process per user, so munge
authenticates every submission and cancel as the plan's user (Slurm's own ``CANCELLED by <uid>``); the
observer (root) reads job states and accounting. A call that Slurm refuses raises :class:`SubmitError`
with Slurm's errno and text and the fix; one that found slurmctld unreachable is retried.

The description is pyslurm's ``JobSubmitDescription`` of tag v24.11.0 (``pyslurm/core/job/
submission.pxd``), field for field what :func:`lab.workload.submit.job_description` sends slurmrestd:

==========================================  ============================================================
slurmrestd v0.0.42 ``job_desc_msg``         pyslurm ``JobSubmitDescription``
==========================================  ============================================================
``partition``                               ``partitions``
``time_limit.number`` (minutes)             ``time_limit`` (whole minutes)
``tres_per_job: gres/gpu:G``                ``gpus=G`` (``tres_per_job gres:gpu:G``)
``nodes: N``, ``tres_per_node: gres/gpu:8``  ``nodes=N``, ``gres_per_node="gpu:8"``
``cpus_per_tres: gres/gpu:C``               ``cpus_per_gpu=C``
``memory_per_tres: gres/gpu:M``             none: the partition's ``DefMemPerGPU`` (M, the same value)
``current_working_directory``               ``working_directory``
``environment: ["K=V", …]``                 ``environment: {"K": "V", …}``
==========================================  ============================================================

``memory_per_gpu`` is left out because the tag cannot set it: ``_set_memory`` in
``pyslurm/core/job/submission.pyx`` formats an undefined name (``val``) and raises ``NameError``. The lab's
partitions set ``DefMemPerGPU`` to the same per-GPU memory (``lab/bringup/render.py``), so Slurm gives
each job what slurmrestd's path asks for explicitly.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from lab.workload import jobscript
from lab.workload.plan import PlannedJob, lab_limit_minutes
from lab.workload.submit import TRANSIENT_SLURM_ERRORS, NodeShape, SubmitError, fix_for

# One call: slurmctld answers in milliseconds; its own RPC timeout is MessageTimeout (10 s).
AGENT_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 60.0  # the agent's start: docker exec, python3 and pyslurm's import


class AgentGone(RuntimeError):
    """The agent process ended or did not answer in time; a new one is started."""


class Agent:
    """One agent process: requests on its stdin, answers on its stdout, its stderr kept for errors."""

    def __init__(self, argv: list[str], timeout_s: float = AGENT_TIMEOUT_S) -> None:
        self.argv, self.timeout_s = argv, timeout_s
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            # Its own session: a Ctrl-C or a SIGTERM to the runner's process group must not end the
            # agents the runner's stop path still cancels through; end of input ends them.
            start_new_session=True,
        )
        self.stderr: deque[str] = deque(maxlen=20)
        assert self.process.stderr is not None
        threading.Thread(target=self._keep, args=(self.process.stderr,), daemon=True).start()
        self.ready = self._read(READY_TIMEOUT_S)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError) as error:
            raise AgentGone(self._why(f"writing to it failed ({error})")) from error
        return self._read(self.timeout_s)

    def close(self) -> None:
        """End the agent (end of input ends its loop) and release its pipes."""
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):  # it died: its stdin is a broken pipe
            self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()

    def _read(self, timeout_s: float) -> dict[str, Any]:
        stdout = self.process.stdout
        assert stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            if not selector.select(timeout_s):
                self.process.kill()
                raise AgentGone(self._why(f"no answer in {timeout_s:.0f} s"))
        line = stdout.readline()
        if not line:
            self.process.wait()
            raise AgentGone(self._why(f"it exited ({self.process.returncode})"))
        try:
            answer = json.loads(line)
        except ValueError as error:
            raise AgentGone(self._why(f"it wrote {line[:200]!r}")) from error
        if not isinstance(answer, dict):
            raise AgentGone(self._why(f"it wrote {line[:200]!r}"))
        return answer

    def _keep(self, stream: IO[str]) -> None:
        for line in stream:
            self.stderr.append(line.rstrip())

    def _why(self, what: str) -> str:
        said = " | ".join(self.stderr)
        stderr = f"; its stderr: {said}" if said else ""
        return f"the pyslurm agent `{' '.join(self.argv)}`: {what}{stderr}"


@dataclass
class PyslurmClient:
    """pyslurm in the lab's controller, one agent per user, with retries and errors that name the fix."""

    argv_for: Callable[[str], list[str]]  # user → the command that starts that user's agent
    # Puts pyslurm and the agent back when an agent cannot import them (a controller made anew).
    reinstall: Callable[[], None] | None = None
    attempts: int = 5
    backoff_s: float = 0.5
    pause: Callable[[float], None] = time.sleep  # between retries
    path: str = "pyslurm"  # how the runner's messages name this way into Slurm
    _agents: dict[str, Agent] = field(default_factory=dict, repr=False)

    def call(self, user: str, request: dict[str, Any]) -> dict[str, Any]:
        """One call as ``user``: retried while slurmctld is unreachable or the agent had to be
        restarted; Slurm's refusals and pyslurm's own checks raise at once."""
        what = f"pyslurm {request['op']} as {user}"
        last = ""
        for attempt in range(self.attempts):
            try:
                answer = self._agent(user).request(request)
            except AgentGone as error:
                self._agents.pop(user).close()
                last = str(error)
            else:
                if answer.get("ok"):
                    return answer
                errno, text = answer.get("errno"), str(answer.get("error"))
                said = f"{text} (Slurm errno {errno})" if errno is not None else text
                if errno not in TRANSIENT_SLURM_ERRORS:
                    raise SubmitError(f"{what}: {said}{fix_for(text)}")
                last = said
            if attempt + 1 < self.attempts:
                self.pause(self.backoff_s * 2**attempt)
        raise SubmitError(
            f"{what}: no answer after {self.attempts} attempts ({last}). "
            "Fix: is the lab up? `lab status` shows the controller and its daemons"
        )

    def _agent(self, user: str) -> Agent:
        agent = self._agents.get(user)
        if agent is None or agent.process.poll() is not None:
            agent = Agent(self.argv_for(user))
            if not agent.ready.get("ok") and self.reinstall is not None:
                agent.close()
                self.reinstall()
                agent = Agent(self.argv_for(user))
            if not agent.ready.get("ok"):
                agent.close()
                raise SubmitError(
                    f"the pyslurm agent as {user} cannot start: {agent.ready.get('error')}. Fix: `lab "
                    "workload run` installs pyslurm into the controller again; --submit-via slurmrestd "
                    "works without it"
                )
            self._agents[user] = agent
        return agent

    def close(self) -> None:
        for agent in self._agents.values():
            agent.close()
        self._agents.clear()

    def description(
        self, job: PlannedJob, time_scale: float, shape: NodeShape, output_dir: str, seed: int
    ) -> dict[str, Any]:
        return job_fields(job, time_scale, shape, output_dir, seed)

    def submit(self, user: str, description: dict[str, Any]) -> int:
        return int(self.call(user, {"op": "submit", "fields": description})["job_id"])

    def cancel(self, user: str, job_id: int) -> None:
        self.call(user, {"op": "cancel", "job_id": job_id})

    def states(self, user: str) -> dict[int, str]:
        answer = self.call(user, {"op": "states"})
        return {int(job_id): str(state) for job_id, state in answer["states"].items()}

    def start_time(self, user: str, job_id: int) -> float | None:
        started = self.call(user, {"op": "start_time", "job_id": job_id}).get("start_time")
        return float(started) if started else None

    def accounting(self, user: str, since_epoch: float) -> dict[int, dict[str, Any]]:
        answer = self.call(user, {"op": "accounting", "since": int(since_epoch)})
        return {int(job["job_id"]): job for job in answer["jobs"]}


def job_fields(
    job: PlannedJob, time_scale: float, shape: NodeShape, output_dir: str, seed: int
) -> dict[str, Any]:
    """pyslurm's ``JobSubmitDescription`` attributes for one planned job (what ``sbatch`` would set)."""
    fields: dict[str, Any] = {
        "name": job.workload_class,
        "account": job.account,
        "partitions": job.partition,
        "qos": job.qos,
        "time_limit": lab_limit_minutes(job.time_limit_s, time_scale),
        "cpus_per_gpu": shape.cpus_per_gpu,
        "working_directory": output_dir,
        "standard_output": f"{output_dir}/workload-%j.out",
        # Without an environment slurmctld refuses a batch job ("I/O error writing script/environment").
        "environment": {"PATH": "/usr/local/bin:/usr/bin:/bin", "LAB_WORKLOAD_CLASS": job.workload_class},
        "comment": f"aifactory-lab workload seed={seed} job={job.index}",
        "script": jobscript.render(job, time_scale),
    }
    if job.nodes > 1:
        fields["nodes"] = job.nodes
        fields["gres_per_node"] = f"gpu:{shape.gpus_per_node}"
    else:
        fields["gpus"] = job.gpus
    return fields


def docker_exec(container: str, agent: str) -> Callable[[str], list[str]]:
    """The agent of each user as a ``docker exec`` into ``container`` (the lab's controller)."""

    def argv(user: str) -> list[str]:
        return ["docker", "exec", "-i", "-u", user, container, "python3", "-u", agent]

    return argv
