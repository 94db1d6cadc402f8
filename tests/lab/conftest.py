"""Fixtures for tests against a live lab. The default lab is brought up if it is not up yet.

Faults stay with the test that made them: every fault a test puts in (a planted file, an XID, a
restarted node) goes into the lab's fault record (:mod:`lab.attach.fault_record`), the test takes it
out again before it returns (``faults_left_behind`` fails it otherwise), and tests that measure over a
window start it after the last fault settled (:func:`window_start`), never at a fixed look-back.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import docker
import pytest
import testinfra
import yaml

from lab import contract, polling, promql
from lab.alerts.listing import Delivered, read_delivered
from lab.attach import fault_record
from lab.blueprint.slurm_blueprint import Blueprint, load
from lab.blueprint.workload_spec import WORKLOAD_CLASSES
from lab.bringup import containers
from lab.paths import DEFAULT_BLUEPRINT, PROJECT_ROOT, lab_state_dir
from lab.workload import background
from tests.lab_groups import DEFAULT_LAB, DERIVED_PORTS, lab_of

LAB_BLUEPRINTS = Path(__file__).parent / "blueprints"
LAB_TESTS = Path(__file__).parent
DASHBOARDS = PROJECT_ROOT / "ansible" / "roles" / "prometheus" / "files" / "dashboards"
VARIABLE = re.compile(r"\$\{?(\w+)\}?")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``LAB_TEST_ORDER=reverse`` runs the lab test modules last to first (each module's tests in
    their own order): a suite whose tests keep their faults to themselves passes in both orders."""
    if os.environ.get("LAB_TEST_ORDER", "") != "reverse":
        return
    lab = [item for item in items if LAB_TESTS in item.path.parents]
    modules = list(dict.fromkeys(item.path for item in lab))[::-1]
    reordered = sorted(lab, key=lambda item: modules.index(item.path))
    slots = iter(reordered)
    items[:] = [next(slots) if LAB_TESTS in item.path.parents else item for item in items]


def run_lab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the real `lab` command line, as a user would."""
    result = subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        pytest.fail(f"lab {' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def wait_for(condition: Callable[[], object], timeout_s: float, what: str, every_s: float = 0.5) -> object:
    """Poll ``condition`` until it returns something truthy; fail with ``what`` at the deadline. The
    polls thin out to one per lab.polling.MAX_EVERY_S (many are `docker exec`s, CPU the other labs need)."""
    deadline = time.monotonic() + timeout_s
    pauses = polling.pauses(every_s)
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what} (last: {value!r})")
        time.sleep(next(pauses))


def logsql(base_url: str, query: str) -> list[dict[str, str]]:
    """The lines a LogsQL query finds in VictoriaLogs (/select/logsql/query: one JSON object per line)."""
    body = urllib.parse.urlencode({"query": query}).encode()
    with urllib.request.urlopen(f"{base_url}/select/logsql/query", data=body, timeout=30) as response:
        return [json.loads(line) for line in response.read().splitlines() if line.strip()]


def unix_time(stamp: str) -> float:
    """Unix seconds of an RFC 3339 stamp as the receiver and Alertmanager write them."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def delivered(lab: str, alertname: str, status: str, since: float) -> list[Delivered]:
    """The notifications the lab's receiver got since ``since`` with ``status`` (firing, resolved)
    that carry ``alertname``, newest first."""
    path = contract.alerts_dir(lab) / contract.ALERTS_FILE
    return [
        d
        for d in read_delivered(path)
        if d.status == status
        and unix_time(d.received_at) >= since
        and any(a["labels"].get("alertname") == alertname for a in d.alerts)
    ]


def silent_panels(prometheus: str, dashboard: str) -> list[str]:
    """The panels of a journey's dashboard whose query errors or returns nothing, each with why: the
    queries as Grafana sends them with every template variable set to All (its allValue, ``.*``)."""
    document = json.loads((DASHBOARDS / dashboard).read_text())
    silent = []
    for panel in document["panels"]:
        for target in panel["targets"]:
            expr = VARIABLE.sub(".*", target["expr"])
            try:
                answered = promql.query(prometheus, expr)
            except promql.PrometheusError as error:
                silent.append(f"{panel['title']}: {error}")
                continue
            if not answered:
                silent.append(f"{panel['title']}: no series for {expr}")
    return silent


def window_start(lab: Blueprint, look_back_s: float, settle_s: float = 30) -> float:
    """The start of a window that reaches ``look_back_s`` back from now, but never over a fault of
    the record: it begins ``settle_s`` (two 15 s scrapes) after the last fault was cleared, waiting
    for that moment when it is still ahead. A fault still in fails the test that asks."""
    still_in = fault_record.active(lab.name)
    if still_in:
        pytest.fail(f"no clean window on lab '{lab.name}': fault(s) still in: {still_in}")
    start = max(time.time() - look_back_s, fault_record.settled_since(lab.name, settle_s))
    wait_for(lambda: time.time() >= start, max(0.0, start - time.time()) + 5, "the last fault to settle")
    return start


def all_scraped_up_since(prometheus: str, since: float) -> bool:
    """Every target of the lab's Prometheus was scraped after ``since`` and is up: Prometheus shows
    the lab as it is now, with none of the series of a fault that ended before ``since``."""
    return not promql.query(prometheus, f"timestamp(up) <= {since:.3f} or up == 0")


def submit_gpu_job(
    controller: testinfra.host.Host, options: str, seconds: int, time_limit_min: int = 5
) -> str:
    """Submit lab-gpu-app as alice with sbatch ``options``; its output goes to /tmp/lab-test-<id>.out."""
    sbatch = f"sbatch --parsable --time={time_limit_min} --output=/tmp/lab-test-%j.out {options}"
    out = controller.check_output(f"su - alice -c \"{sbatch} --wrap 'lab-gpu-app --seconds {seconds}'\"")
    return str(out).strip().split(";")[0]


def running_job_gpus(
    controller: testinfra.host.Host, job: str, timeout_s: float = 60
) -> tuple[str, set[str]]:
    """(node, GPU indices) of a running job, from `scontrol show job -d` (GRES=gpu:h100:2(IDX:0-1))."""

    def shown() -> str:
        text = controller.check_output(f"scontrol show job -d {job}")
        return text if "JobState=RUNNING" in text and "IDX:" in text else ""

    text = str(wait_for(shown, timeout_s, f"job {job} running with GPUs"))
    match = re.search(r"Nodes=(\S+) .*?GRES=\S*\(IDX:([0-9,\-]+)\)", text)
    assert match, text
    indices: set[str] = set()
    for part in match.group(2).split(","):
        low, _, high = part.partition("-")
        indices.update(str(i) for i in range(int(low), int(high or low) + 1))
    return match.group(1), indices


@pytest.fixture(autouse=True)
def faults_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a lab test that returns with a fault still in its lab's fault record that went in while it
    ran: the next test would find the lab broken, and Prometheus would carry the fault into its windows.
    Only the test's own lab is read: another worker's lab may be mid-fault meanwhile."""
    began = time.time()
    yield
    lab = lab_of(request.node.nodeid) or DEFAULT_LAB
    left = [
        f"{lab}: {event.kind} {event.target} (by {event.by})"
        for event in fault_record.active(lab)
        if event.at >= began
    ]
    if left:
        pytest.fail(f"{request.node.nodeid} left fault(s) in: {'; '.join(left)}")


@pytest.fixture(scope="session")
def engine() -> Iterator[docker.DockerClient]:
    client = docker.from_env()
    client.ping()
    yield client
    client.close()


@pytest.fixture(scope="session")
def default_lab(engine: docker.DockerClient) -> Iterator[Blueprint]:
    """The default lab, with its live workload held off while the tests run: that workload allocates
    up to 77 % of the GPUs in service (Helios Venus, in expectation), for hours per job, and the
    tests' own jobs need free GPUs now. A live workload that ran before starts again afterwards,
    its plan resumed."""
    blueprint = load(DEFAULT_BLUEPRINT)
    if not containers.lab_containers(engine, blueprint.name):
        run_lab("up", "--blueprint", str(DEFAULT_BLUEPRINT))
    _require_exporter(engine, blueprint)
    # What `lab up` left building in the background (the web UI, the workload's pyslurm wheel) is
    # finished first: stopping the workload mid-build would throw its wheel away.
    run_lab("status", "--lab", blueprint.name, "--wait")
    was_running = background.stop(blueprint.name)
    cancel_workload_jobs(
        testinfra.get_host(f"docker://{contract.container_name(blueprint.name, 'controller')}")
    )
    yield blueprint
    if was_running:  # from a child, so that no Popen of the detached runner is left to this process
        start = f"background.start({blueprint.name!r}, {str(DEFAULT_BLUEPRINT)!r})"
        code = f"from lab.workload import background; {start}"
        subprocess.run([sys.executable, "-c", code], check=True)


def cancel_workload_jobs(controller: testinfra.host.Host) -> None:
    """Cancel the workload's jobs (named by their class, lab.workload.submit) and wait until none runs."""
    for name in WORKLOAD_CLASSES:  # scancel takes one name at a time
        controller.run(f"scancel --name={name}")
    names = ",".join(WORKLOAD_CLASSES)
    wait_for(
        lambda: not controller.check_output(f"squeue --noheader --name={names} --format=%i").strip(),
        60,
        "the workload's jobs cancelled",
    )


def _require_exporter(engine: docker.DockerClient, blueprint: Blueprint) -> None:
    """No lab test passes on a lab without the pinned Slurm exporter: it is part of what they check."""
    controller = containers.find_container(engine, blueprint.name, "controller")
    running = controller is not None and controller.exec_run(["pgrep", "-x", "slurm_exporter"]).exit_code == 0
    if not running:
        status = lab_state_dir(blueprint.name) / "exporter-status"
        why = (
            status.read_text().strip() if status.exists() else "no exporter-status: `lab up` did not build it"
        )
        pytest.fail(f"the Slurm exporter is not running on lab '{blueprint.name}': {why}. Fix: `lab up`.")


@pytest.fixture(scope="session")
def host(default_lab: Blueprint) -> Callable[[str], testinfra.host.Host]:
    """``host("controller")`` → a testinfra host for that container of the default lab."""

    def get(hostname: str) -> testinfra.host.Host:
        return testinfra.get_host(f"docker://{contract.container_name(default_lab.name, hostname)}")

    return get


def derived_blueprint(path: Path, name: str, **slurm: object) -> Path:
    """Write blueprints/default.yaml as shipped, as lab ``name`` on its host ports
    (tests.lab_groups.DERIVED_PORTS), without the workload and the fence, to ``path``; ``slurm`` sets
    values of its slurm section."""
    document = yaml.safe_load(DEFAULT_BLUEPRINT.read_text())
    document.update(name=name, ports=DERIVED_PORTS[name], egress={"enabled": False})
    document.pop("workload", None)
    document["slurm"].update(slurm)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def racks_lab(engine: docker.DockerClient) -> Iterator[Blueprint]:
    """A second, reduced rack lab beside the default one, removed (with --purge) after its module, so it
    loads no other test."""
    path = LAB_BLUEPRINTS / "racks.yaml"
    blueprint = load(path)
    run_lab("up", "--blueprint", str(path))
    yield blueprint
    run_lab("down", "--lab", blueprint.name, "--purge")
