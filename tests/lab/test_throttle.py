"""The slow-job fault on the live lab: `lab fault throttle` slows one GPU of a running 2-GPU job, the
shim's series in Prometheus show the straggler and its waiting partner, and clearing restores them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from testinfra.host import Host

from lab import promql
from lab.attach import fault_record
from lab.blueprint.slurm_blueprint import Blueprint

from .conftest import run_lab, running_job_gpus, submit_gpu_job, wait_for

pytestmark = pytest.mark.lab

# signals/dcgm.md, "Throttled GPU": a power brake halves the SM clock (1980 → 990 MHz); the other GPU
# of the job then computes half of each step: tensor-pipe activity ~0.34 → ~0.17, board power
# ~550 → ~430 W, while its own SM clock stays at 1980 MHz.
BRAKED_MHZ = 990
MAX_MHZ = 1980
IDLE_MHZ = 345
WAITING_TENSOR_BELOW = 0.25  # mean over a minute: healthy ~0.34, waiting ~0.17
WAITING_POWER_BELOW_W = 490.0  # mean over a minute: healthy ~550 W, waiting ~430 W


def _values(prometheus: str, query: str) -> list[float]:
    return [series.value for series in promql.query(prometheus, query)]


def test_a_power_brake_slows_its_gpu_and_the_job_waits_for_it(
    host: Callable[[str], Host], default_lab: Blueprint, request: pytest.FixtureRequest
) -> None:
    prometheus = f"http://127.0.0.1:{default_lab.ports.prometheus}"
    controller = host("controller")
    job = submit_gpu_job(controller, "--gres=gpu:2", 600, time_limit_min=12)
    node, gpus = running_job_gpus(controller, job)
    braked, partner = sorted(gpus, key=int)
    selector = f'hpc_job="{job}",instance="{node}:9400"'

    def clock(gpu: str) -> list[float]:
        return _values(prometheus, f'DCGM_FI_DEV_SM_CLOCK{{{selector},gpu="{gpu}"}}')

    wait_for(lambda: clock(braked) and clock(partner), 60, f"job {job}'s two GPUs in Prometheus")
    try:
        run_lab("fault", "throttle", node, braked, "power-brake", "--lab", default_lab.name)
        assert wait_for(lambda: clock(braked) == [BRAKED_MHZ], 90, f"GPU {braked} at {BRAKED_MHZ} MHz")

        # The partner: its mean over a minute of scrapes that all came after the brake.
        def waiting() -> tuple[list[float], list[float]] | None:
            window = f'{{{selector},gpu="{partner}"}}[1m]'
            tensor = _values(prometheus, f"avg_over_time(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{window})")
            power = _values(prometheus, f"avg_over_time(DCGM_FI_DEV_POWER_USAGE{window})")
            low = tensor and power and tensor[0] < WAITING_TENSOR_BELOW and power[0] < WAITING_POWER_BELOW_W
            return (tensor, power) if low else None

        wait_for(waiting, 120, f"GPU {partner} of job {job} waiting for the straggler")
        assert clock(partner) in ([MAX_MHZ], [IDLE_MHZ])  # its own clock does not move (345: a stall)
    finally:
        run_lab("fault", "throttle", node, braked, "clear", "--lab", default_lab.name)
        wait_for(lambda: clock(braked) in ([MAX_MHZ], [IDLE_MHZ], []), 90, f"GPU {braked} unthrottled")
        controller.run(f"scancel {job}")

    # Healthy again: the GPU back unlabelled at idle clocks once the epilog emptied its mapping file.
    def idle() -> bool:
        query = f'DCGM_FI_DEV_SM_CLOCK{{instance="{node}:9400",gpu="{braked}",hpc_job=""}}'
        return _values(prometheus, query) == [IDLE_MHZ] and not clock(braked)

    wait_for(idle, 90, f"GPU {braked} of {node} idle and unthrottled in Prometheus")
    fault_record.record(
        default_lab.name, "throttle", f"{node}/{braked}", "cleared", request.node.nodeid, settled=True
    )
