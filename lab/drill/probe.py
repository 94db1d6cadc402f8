"""The running lab as a drill sees it: commands in its containers, Slurm's answers, Prometheus' samples,
and polling with a deadline (a drill never sleeps for a fixed time where it can wait for a condition).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from docker.models.containers import Container

from lab import contract, polling, promql
from lab.alerts.listing import read_delivered
from lab.attach.running import RunningLab
from lab.bringup.daemons import DAEMON_COMMAND
from lab.drill.checks import delivered_alerts, matches
from lab.workload import background

T = TypeVar("T")

JOB_START_S = 120  # a drill job waits at most this long for free GPUs beside the live workload
STATE_SAVE = "/var/spool/slurm/ctld"  # slurm.conf StateSaveLocation in the lab
EMPTY_RETRIES = 3  # an exec's output lost once in hundreds of calls; three losses in a row were never seen
_SUBMITTED = re.compile(r"\bsubmitted job (\d+):")  # the runner's progress line, after its clock


class DrillError(RuntimeError):
    """The drill could not go on (the lab is not in a state to drill, or a step failed); it says why."""


class DrillTimeout(DrillError):
    """A condition the drill waited for did not come within its deadline."""


@dataclass
class Probe:
    lab: RunningLab
    say: Callable[[str], None]
    submitted: list[str] = field(default_factory=list)  # the drill's own jobs, in order
    # The drill's reservation and its node (lab.drill.room): every job the drill submits names it.
    reservation: str | None = None
    reserved_node: str | None = None
    _workload_log_offset: int = 0

    # --- containers ---

    def container(self, host: str) -> Container:
        found = self.lab.container(host)
        if found is None:
            raise DrillError(f"lab '{self.lab.name}' has no container for {host}. Fix: `lab up`.")
        found.reload()
        return found

    def run(self, host: str, command: str) -> tuple[int, str]:
        """``sh -c command`` in ``host``'s container: exit code and output (stdout and stderr)."""
        code, output = self.container(host).exec_run(["sh", "-c", command])
        return code, output.decode("utf-8", "replace")

    def check(self, host: str, command: str) -> str:
        code, output = self.run(host, command)
        if code != 0:
            raise DrillError(f"{host}: `{command}` exited {code}: {output.strip()[:300]}")
        return output

    def daemon(self, host: str, action: str, *names: str) -> str:
        return self.check(host, shlex.join([DAEMON_COMMAND, action, *names]))

    def daemon_running(self, host: str, name: str) -> bool:
        return self.run(host, shlex.join([DAEMON_COMMAND, "status", name]))[1].strip() == f"{name} running"

    def kill(self, host: str, process: str) -> None:
        """SIGKILL, as the OOM killer or a crash ends a daemon: no clean shutdown, no state saved."""
        self.check(host, f"pkill -KILL -x {shlex.quote(process)}")

    # --- Slurm ---

    def slurm(self, command: str) -> str:
        return self.check("controller", command)

    def ask(self, command: str) -> str:
        """A read-only Slurm query that always prints something: asked again (up to EMPTY_RETRIES
        times) when the exec's output comes back empty (https://github.com/moby/moby/issues/27289)."""
        for _ in range(EMPTY_RETRIES):
            answer = self.slurm(command)
            if answer.strip():
                return answer
        return self.slurm(command)

    def controller_answers(self) -> bool:
        code, output = self.run("controller", "scontrol ping")
        return code == 0 and "is UP" in output

    def state_saved_after(self, since: float) -> bool:
        """slurmctld wrote its job state (StateSaveLocation/job_state) after the Unix time ``since``.
        It saves on a timer, a few seconds after a change: a job it has not saved yet is lost with it."""
        code, mtime = self.run("controller", f"stat -c %.9Y {STATE_SAVE}/job_state")
        return code == 0 and float(mtime.strip() or 0) > since

    def full_state_saved(self) -> bool:
        """slurmctld has made a full state save (StateSaveLocation/assoc_usage exists), which it does every
        300 s and without which Slurm 25.05 and later refuse to restart (lab.versions)."""
        return self.run("controller", f"test -e {STATE_SAVE}/assoc_usage")[0] == 0

    def submit(self, gpus: int, seconds: int, *, user: str | None = None, options: str = "") -> str:
        """A job that runs lab-gpu-app on ``gpus`` GPUs for ``seconds``, as a blueprint user."""
        user = user or self.lab.blueprint.all_users[0].name
        if self.reservation:
            options = f"--reservation={self.reservation} {options}"
        sbatch = (
            f"sbatch --parsable --job-name=drill --time=10 --gres=gpu:{gpus} --output=/dev/null "
            f"{options} --wrap {shlex.quote(f'lab-gpu-app --seconds {seconds}')}"
        )
        # sbatch's answer is kept in a file too: an exec's output can come back empty though the command
        # ran (https://github.com/moby/moby/issues/27289), and a second sbatch would be a second job.
        answer = f"/tmp/drill-sbatch-{len(self.submitted)}"
        job = self.slurm(f"runuser -u {shlex.quote(user)} -- {sbatch} > {answer} && cat {answer}")
        for _ in range(EMPTY_RETRIES):
            if job.strip():
                break
            job = self.slurm(f"cat {answer}")
        job = job.strip().split(";")[0]
        if not job.isdigit():
            raise DrillError(f"sbatch answered {job!r}, not a job id")
        self.submitted.append(job)
        return job

    def queued(self) -> set[str]:
        return set(self.slurm("squeue -h -o %i").split())

    def job_states(self, jobs: list[str]) -> dict[str, str]:
        """Job id → its state in accounting (the last run of a requeued job)."""
        if not jobs:
            return {}
        text = self.slurm(f"sacct -X -n -P -j {','.join(jobs)} -o JobIDRaw,State")
        states: dict[str, str] = {}
        for line in text.splitlines():
            job, _, state = line.partition("|")
            if job:
                states[job] = state
        return states

    def squeue_state(self, job: str) -> str:
        return self.slurm(f"squeue -h -j {job} -o %T 2>/dev/null || true").strip()

    def job_nodes_gpus(self, job: str) -> tuple[str, list[int]]:
        """The node a running one-node job is on, and its GPU indices (``scontrol show job -d``)."""
        detail = self.ask(f"scontrol show job -d {job}")
        # e.g. "Nodes=dgx-001 CPU_IDs=0-13 Mem=250000 GRES=gpu:h100:2(IDX:0-1)"
        match = re.search(r"Nodes=(\S+) .*?GRES=\S*\(IDX:([0-9,\-]+)\)", detail)
        if match is None:
            raise DrillError(f"job {job} holds no GPUs yet: {detail.strip()[:200]}")
        return match[1], _indices(match[2])

    def node_state(self, node: str) -> tuple[str, str]:
        """sinfo's state (e.g. ``idle``, ``down*``, ``drained``) and reason of one node."""
        line = self.ask(f"sinfo --noheader --Node --nodes={shlex.quote(node)} --format='%T|%E'")
        state, _, reason = line.strip().splitlines()[0].partition("|")
        return state, reason

    def in_service(self, node: str) -> bool:
        """The node takes jobs now: idle, mixed or allocated, or reserved (idle in a reservation), with no
        mark (``*`` not responding …)."""
        return self.node_state(node)[0].rstrip("*~#!%$@^-") in ("idle", "mixed", "allocated", "reserved")

    def free_gpus(self, node: str) -> int:
        """GPUs of ``node`` no job holds (``scontrol show node``: CfgTRES minus AllocTRES)."""
        tres = dict(
            item.split("=", 1)
            for item in self.ask(f"scontrol show node -o {shlex.quote(node)}").split()
            if "=" in item
        )
        return _gpus(tres.get("CfgTRES", "")) - _gpus(tres.get("AllocTRES", ""))

    def node_with_free_gpus(self, gpus: int) -> str:
        """The drill's reserved node (lab.drill.room) once it has ``gpus`` free GPUs; without a
        reservation, the node in service with the most free GPUs, at least ``gpus``, waited for up to
        JOB_START_S."""
        if self.reserved_node is not None:
            node = self.reserved_node
            free = f"{gpus} free GPUs on {node}, reserved for the drill"
            return self.until(lambda: node if self.free_gpus(node) >= gpus else None, JOB_START_S, free)

        def best() -> str | None:
            free = {str(n): self.free_gpus(n) for n in self.lab.blueprint.nodes.names if self.in_service(n)}
            node = max(free, key=lambda n: free[n], default=None)
            return node if node is not None and free[node] >= gpus else None

        try:
            return self.until(best, JOB_START_S, f"a node with {gpus} free GPUs")
        except DrillTimeout:
            raise DrillError(
                f"the lab is too busy: no node in service had {gpus} free GPUs for {JOB_START_S} s. "
                "Fix: run the drill later, or with the workload held (`lab up --no-workload`)."
            ) from None

    def state_if(self, node: str, prefix: str) -> tuple[str, str] | None:
        """The node's (state, reason) when its state begins with ``prefix`` (down, drain …), else None."""
        state, reason = self.node_state(node)
        return (state, reason) if state.startswith(prefix) else None

    def running(self, job: str) -> bool:
        return self.squeue_state(job) == "RUNNING"

    def started(self, job: str) -> bool:
        """Running now, or already ended COMPLETED (a job slurmctld lost is neither)."""
        if self.squeue_state(job) in ("RUNNING", "COMPLETING"):
            return True
        return self.job_states([job]).get(job) == "COMPLETED" and job not in self.queued()

    def ended(self, jobs: list[str]) -> bool:
        return not set(jobs) & self.queued()

    # --- nodes' hosts and job-mapping files ---

    def host_of(self, node: str) -> str:
        """The container a node's slurmd runs in: the node itself, or its rack."""
        for rack, members in (self.lab.blueprint.racks or {}).items():
            if node in members:
                return str(rack)
        return node

    def mapping_dir(self, node: str) -> str:
        return f"{contract.JOB_MAPPING_DIR}/{node}" if self.lab.blueprint.racks else contract.JOB_MAPPING_DIR

    def mapping_files(self, node: str) -> dict[str, list[str]]:
        """GPU file name → the job ids in it, for one node (regular files only, as the prolog writes)."""
        listing = self.check(
            self.host_of(node),
            f"cd {shlex.quote(self.mapping_dir(node))} && for f in *; do "
            '[ -f "$f" ] && [ ! -L "$f" ] && printf "%s:%s\\n" "$f" "$(tr "\\n" " " <"$f")"; done; true',
        )
        files: dict[str, list[str]] = {}
        for line in listing.splitlines():
            name, _, ids = line.partition(":")
            files[name] = ids.split()
        return files

    # --- the workload's jobs ---

    def mark_workload_log(self) -> None:
        path = background.log_file(self.lab.name)
        self._workload_log_offset = path.stat().st_size if path.exists() else 0

    def workload_submissions(self) -> list[str]:
        """Job ids the live workload submitted since :meth:`mark_workload_log`."""
        path = background.log_file(self.lab.name)
        if not path.exists():
            return []
        with path.open("rb") as log:
            log.seek(self._workload_log_offset)
            return _SUBMITTED.findall(log.read().decode("utf-8", "replace"))

    # --- Prometheus ---

    def query(self, expression: str) -> list[promql.Series]:
        return promql.query(self.lab.prometheus_url, expression)

    def scraped_since(self, instance: str, since: float) -> bool:
        """Prometheus scraped ``instance`` successfully after the Unix time ``since``."""
        selector = f'up{{instance="{instance}"}}'
        return bool(self.query(f"{selector} == 1 and timestamp({selector}) > {since:.3f}"))

    def all_scraped_since(self, since: float) -> bool:
        """Every target was scraped (successfully or not) after ``since``: the window holds its last state."""
        return not self.query(f"timestamp(up) <= {since:.3f}")

    def answers_http(self, host: str, port: int, path: str = "/metrics") -> bool:
        """An HTTP 200 from ``127.0.0.1:port`` inside ``host``'s container (what a local agent sees)."""
        fetch = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}{path}', timeout=2)"
        return self.run(host, f'python3 -c "{fetch}"')[0] == 0

    def gauge(self, family: str) -> float | None:
        """The value of a one-series family (the exporter's sdiag gauges), None while it has none."""
        series = self.query(family)
        return series[0].value if series else None

    def prometheus_ready(self) -> bool:
        try:
            return bool(self.query("vector(1)"))
        except promql.PrometheusError:
            return False

    def scrape_interval_s(self) -> float:
        intervals = [_seconds(t["scrapeInterval"]) for t in promql.targets(self.lab.prometheus_url)]
        if not intervals:
            raise DrillError("Prometheus has no active target. Fix: `lab up`.")
        return max(intervals)

    def up_samples(self, start: float, end: float) -> dict[str, list[tuple[float, float]]]:
        """Every target's raw ``up`` samples in [start, end], keyed ``job/instance``."""
        window = max(1, round(end - start))
        data = promql.raw_range(self.lab.prometheus_url, f"up[{window}s]", end)
        return {
            f"{item['metric'].get('job')}/{item['metric'].get('instance')}": [
                (float(t), float(v)) for t, v in item["values"]
            ]
            for item in data
        }

    # --- the alert receiver ---

    def received(self, since: float) -> list[tuple[float, dict[str, Any]]]:
        """(received at, alert) for every alert of every notification the lab's receiver got since
        the Unix time ``since`` (the receiver's JSON lines under .lab/LAB/alerts/)."""
        path = contract.alerts_dir(self.lab.name) / contract.ALERTS_FILE
        return delivered_alerts(read_delivered(path), since)

    def delivered(self, alert: str, labels: dict[str, str], status: str, since: float) -> bool:
        """The receiver got ``alert`` (with ``labels`` among its labels) as ``status`` since ``since``."""
        return any(
            a["status"] == status and matches(a["labels"], alert, labels) for _, a in self.received(since)
        )

    # --- waiting ---

    def until(
        self, condition: Callable[[], T | None], timeout_s: float, what: str, every_s: float = 0.5
    ) -> T:
        """Poll ``condition`` until it returns something true and return that, or raise DrillTimeout.
        The polls thin out (lab.polling): a drill's "within N s" is to within MAX_EVERY_S."""
        deadline = time.monotonic() + timeout_s
        last_error: Exception | None = None
        pauses = polling.pauses(every_s)
        while True:
            try:
                value = condition()
                if value:
                    return value
            except (DrillError, promql.PrometheusError) as error:
                last_error = error
            if time.monotonic() >= deadline:
                hint = f" (last error: {last_error})" if last_error else ""
                raise DrillTimeout(f"{what}: not within {timeout_s:.0f} s{hint}")
            time.sleep(next(pauses))


def _gpus(tres: str) -> int:
    """``gres/gpu=N`` of a TRES list (``cpu=112,mem=2000000M,gres/gpu=8``); 0 without one."""
    for item in tres.split(","):
        if item.startswith("gres/gpu="):
            return int(item.split("=", 1)[1])
    return 0


def _indices(text: str) -> list[int]:
    indices: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        indices.extend(range(int(low), int(high or low) + 1))
    return indices


def _seconds(duration: str) -> float:
    """Prometheus durations as the targets API prints them (``15s``, ``1m``, ``1m30s``)."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration))
