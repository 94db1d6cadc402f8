"""DCGM construct on the live lab: real Prolog/Epilog → mapping files → shim → Prometheus, and the
XID failed-job journey (fault → DCGM series → health-check drain → failed job with a CUDA line)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial

import pytest
from testinfra.host import Host

from lab import promql
from lab.blueprint.slurm_blueprint import Blueprint
from lab.contract import JOB_MAPPING_DIR

from .conftest import run_lab, running_job_gpus, submit_gpu_job, wait_for

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def prometheus(default_lab: Blueprint) -> str:
    return f"http://127.0.0.1:{default_lab.ports.prometheus}"


def test_prometheus_scrapes_every_dcgm_target_and_itself(prometheus: str, default_lab: Blueprint) -> None:
    expected = {f"{node}:9400" for node in default_lab.nodes.names} | {"localhost:9090"}

    def healthy() -> set[str]:
        return {t["labels"]["instance"] for t in promql.targets(prometheus) if t["health"] == "up"}

    wait_for(lambda: healthy() >= expected, 60, "every target up")


def test_rendered_prometheus_config_passes_promtool(host: Callable[[str], Host]) -> None:
    checked = host("prometheus").run("promtool check config /etc/prometheus/prometheus.yml")
    assert checked.rc == 0, checked.stdout + checked.stderr


@pytest.fixture
def gpu_job(host: Callable[[str], Host]) -> Iterator[str]:
    controller = host("controller")
    # No --nodelist: Slurm places it beside whatever the live workload runs.
    job = submit_gpu_job(controller, "--gres=gpu:2", 90)
    yield job
    controller.run(f"scancel {job}")


def test_running_job_labels_exactly_its_gpus_until_the_epilog(
    host: Callable[[str], Host], prometheus: str, gpu_job: str
) -> None:
    controller = host("controller")
    node, gpus = running_job_gpus(controller, gpu_job)
    assert len(gpus) == 2

    mapping = host(node).check_output(f"grep -lx {gpu_job} {JOB_MAPPING_DIR}/* || true").split()
    assert {path.rsplit("/", 1)[1] for path in mapping} == gpus

    def labelled() -> set[tuple[str, str]]:
        series = promql.query(prometheus, f'DCGM_FI_DEV_GPU_UTIL{{hpc_job="{gpu_job}"}}')
        return {(s.labels["instance"], s.labels["gpu"]) for s in series}

    wanted = {(f"{node}:9400", gpu) for gpu in gpus}
    assert wait_for(lambda: labelled() == wanted and labelled(), 60, "hpc_job series in Prometheus") == wanted
    log = host(node).check_output("cat /var/log/slurm/dcgm-job-mapping.log")
    assert re.search(rf"action=prolog job_id={gpu_job} node={node} gpus=\S+ .*result=ok", log)

    controller.check_output(f"scancel {gpu_job}")
    wait_for(lambda: not labelled(), 60, f"no series with hpc_job={gpu_job} after the epilog")
    for gpu in gpus:
        assert gpu_job not in host(node).file(f"{JOB_MAPPING_DIR}/{gpu}").content_string.split()
    assert re.search(
        rf"action=epilog job_id={gpu_job} ",
        host(node).check_output("cat /var/log/slurm/dcgm-job-mapping.log"),
    )


def _none(prometheus: str, query: str) -> bool:
    return not promql.query(prometheus, query)


@pytest.fixture
def faults(
    host: Callable[[str], Host], default_lab: Blueprint, prometheus: str
) -> Iterator[list[tuple[str, str]]]:
    """(node, job) pairs a test faulted; afterwards: job cancelled, XID cleared (`lab fault` records
    it), node resumed, and no XID of that node left in Prometheus."""
    faulted: list[tuple[str, str]] = []
    yield faulted
    for node, job in faulted:
        host("controller").run(f"scancel {job}")
        run_lab("fault", "xid", node, "5", "0", "--lab", default_lab.name)
        host("controller").run(f"scontrol update NodeName={node} State=RESUME")
        xid = f'DCGM_FI_DEV_XID_ERRORS{{instance="{node}:9400"}} != 0'
        wait_for(partial(_none, prometheus, xid), 60, f"the XID of {node} gone from Prometheus")


def test_xid_79_drains_the_node_and_fails_the_job_on_that_gpu(
    host: Callable[[str], Host], prometheus: str, default_lab: Blueprint, faults: list[tuple[str, str]]
) -> None:
    controller = host("controller")
    # A whole node, wherever Slurm finds one free beside the live workload.
    job = submit_gpu_job(controller, "--gres=gpu:8", 120)
    faulted_node, _ = running_job_gpus(controller, job)
    faults.append((faulted_node, job))
    run_lab("fault", "xid", faulted_node, "5", "79", "--lab", default_lab.name)

    def reason() -> str:
        line = controller.check_output(f"sinfo --noheader --Node --nodes={faulted_node} --format='%T|%E'")
        return line if line.startswith("drain") else ""

    drained = str(wait_for(reason, 75, f"{faulted_node} drained by the XID health check"))
    assert "XID 79 GPU has fallen off the bus on GPU 5" in drained

    def state() -> str:
        return controller.check_output(f"sacct -X -n -P -j {job} -o State").strip()

    assert wait_for(lambda: state() == "FAILED" and state(), 60, f"job {job} FAILED") == "FAILED"
    output = host(faulted_node).check_output(f"cat /tmp/lab-test-{job}.out")
    assert re.search(rf"job={job} gpu=5 xid=79 RuntimeError: CUDA error", output), output

    def xid_series() -> list[promql.Series]:
        return promql.query(prometheus, f'DCGM_FI_DEV_XID_ERRORS{{instance="{faulted_node}:9400"}} != 0')

    series = wait_for(xid_series, 60, "the XID in Prometheus")
    assert [(s.labels["gpu"], s.labels["err_code"], s.value) for s in series] == [("5", "79", 79.0)]
    assert series[0].labels["err_msg"] == "GPU has fallen off the bus"
