"""GPU model: physically plausible H100 values, workload classes, monotonic counters, threads."""

from __future__ import annotations

import itertools
import random
import statistics
import threading

import pytest

from lab.dcgm import h100
from lab.dcgm.device import gpu_uuid, node_gpus, pci_bus_id
from lab.dcgm.gpu_model import GpuModel
from lab.dcgm.workloads import PROFILES, WorkloadProfile


def readings(profile: WorkloadProfile | None, n: int = 400, seed: int = 7) -> list[dict[str, str]]:
    model = GpuModel(random.Random(seed))
    workloads = [profile] if profile else []
    allocation = ("job",) if profile else ()
    return [model.read(15.0 * i, workloads, allocation=allocation) for i in range(n)]


def column(rows: list[dict[str, str]], field: str) -> list[float]:
    return [float(row[field]) for row in rows]


def test_an_idle_gpu_draws_idle_power_at_idle_clocks() -> None:
    rows = readings(None)
    assert all(60 <= p <= 95 for p in column(rows, "DCGM_FI_DEV_POWER_USAGE"))
    assert set(column(rows, "DCGM_FI_DEV_GPU_UTIL")) == {0}
    assert set(column(rows, "DCGM_FI_DEV_SM_CLOCK")) == {h100.SM_CLOCK_IDLE_MHZ}
    assert set(column(rows, "DCGM_FI_DEV_FB_USED")) == {0}
    assert all(25 <= t <= 35 for t in column(rows, "DCGM_FI_DEV_GPU_TEMP"))


@pytest.mark.parametrize(
    ("name", "util_median", "power_median"),
    [
        ("training", (90, 100), (450, 700)),
        ("inference", (30, 70), (200, 450)),
        ("interactive", (0, 5), (60, 130)),
    ],
)
def test_workload_classes_set_utilisation_and_power(
    name: str, util_median: tuple[float, float], power_median: tuple[float, float]
) -> None:
    rows = readings(PROFILES[name])
    util = statistics.median(column(rows, "DCGM_FI_DEV_GPU_UTIL"))
    power = statistics.median(column(rows, "DCGM_FI_DEV_POWER_USAGE"))
    assert util_median[0] <= util <= util_median[1]
    assert power_median[0] <= power <= power_median[1]


@pytest.mark.parametrize("name", [None, *PROFILES])
def test_every_value_stays_inside_h100_limits(name: str | None) -> None:
    for row in readings(PROFILES[name] if name else None):
        assert 0 <= float(row["DCGM_FI_DEV_GPU_UTIL"]) <= 100
        assert 0 <= float(row["DCGM_FI_DEV_MEM_COPY_UTIL"]) <= 100
        assert float(row["DCGM_FI_DEV_POWER_USAGE"]) <= h100.TDP_W
        assert h100.SM_CLOCK_IDLE_MHZ <= int(row["DCGM_FI_DEV_SM_CLOCK"]) <= h100.SM_CLOCK_MAX_MHZ
        assert int(row["DCGM_FI_DEV_SM_CLOCK"]) % h100.CLOCK_STEP_MHZ == 0
        assert int(row["DCGM_FI_DEV_MEM_CLOCK"]) == h100.MEM_CLOCK_MHZ
        for ratio in ("GR_ENGINE_ACTIVE", "PIPE_TENSOR_ACTIVE", "DRAM_ACTIVE"):
            assert 0.0 <= float(row[f"DCGM_FI_PROF_{ratio}"]) <= 1.0
        fb = [int(row[f"DCGM_FI_DEV_FB_{part}"]) for part in ("FREE", "USED", "RESERVED")]
        assert sum(fb) == h100.FB_TOTAL_MIB and min(fb) >= 0
        assert 20 <= int(row["DCGM_FI_DEV_GPU_TEMP"]) <= 90
        assert 0 <= int(row["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]) <= h100.NVLINK_MAX_MBPS
        assert int(row["DCGM_FI_PROF_PCIE_RX_BYTES"]) <= h100.PCIE_MAX_BYTES_PER_S


def test_fleet_of_training_and_idle_gpus_looks_like_seren() -> None:
    # Seren DCGM GPU_UTIL: median ~99 %, p25 = 0 (shared/reference/workloads.md).
    rows = readings(PROFILES["training"], 300, seed=1) * 3 + readings(None, 300, seed=2)
    quartiles = statistics.quantiles(column(rows, "DCGM_FI_DEV_GPU_UTIL"), n=4)
    assert quartiles[0] == 0
    assert quartiles[1] >= 90


@pytest.mark.parametrize(
    "field",
    ["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"],
)
def test_counters_never_decrease(field: str) -> None:
    values = column(readings(PROFILES["training"], 2000), field)
    assert all(b >= a for a, b in itertools.pairwise(values))


def test_energy_is_power_integrated_over_wall_time() -> None:
    model = GpuModel(random.Random(3))
    first = model.read(0.0, [PROFILES["training"]])
    second = model.read(15.0, [PROFILES["training"]])
    delta_j = (
        int(second["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"])
        - int(first["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"])
    ) / 1000
    p1, p2 = float(first["DCGM_FI_DEV_POWER_USAGE"]), float(second["DCGM_FI_DEV_POWER_USAGE"])
    assert delta_j == pytest.approx((p1 + p2) / 2 * 15, rel=1e-3)
    # Energy since boot: at least a day at idle power when first read.
    assert int(first["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]) >= 86400 * h100.IDLE_POWER_W * 1000


def test_no_time_passing_adds_no_energy() -> None:
    model = GpuModel(random.Random(3))
    a = model.read(5.0, [PROFILES["training"]])
    b = model.read(5.0, [PROFILES["training"]])
    assert a["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] == b["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]


def test_temperature_follows_load_with_a_lag() -> None:
    model = GpuModel(random.Random(4))
    start = int(model.read(0.0, [PROFILES["training"]])["DCGM_FI_DEV_GPU_TEMP"])
    after_ten_minutes = int(model.read(600.0, [PROFILES["training"]])["DCGM_FI_DEV_GPU_TEMP"])
    assert start <= 35 < 50 <= after_ten_minutes


def test_framebuffer_is_held_while_the_same_jobs_run() -> None:
    model = GpuModel(random.Random(5))
    used = {
        model.read(15.0 * i, [PROFILES["training"]], allocation=("42",))["DCGM_FI_DEV_FB_USED"]
        for i in range(20)
    }
    assert len(used) == 1
    released = model.read(400.0, [], allocation=())["DCGM_FI_DEV_FB_USED"]
    assert released == "0"


def test_the_busiest_class_sets_the_pace_on_a_shared_gpu() -> None:
    shared = readings_for([PROFILES["interactive"], PROFILES["training"]])
    assert statistics.median(column(shared, "DCGM_FI_DEV_GPU_UTIL")) >= 90


def readings_for(workloads: list[WorkloadProfile]) -> list[dict[str, str]]:
    model = GpuModel(random.Random(9))
    return [model.read(15.0 * i, workloads, allocation=("a", "b")) for i in range(200)]


def test_same_seed_same_values() -> None:
    assert readings(PROFILES["inference"], 50, seed=11) == readings(PROFILES["inference"], 50, seed=11)


@pytest.mark.race
def test_concurrent_reads_keep_counters_consistent() -> None:
    model = GpuModel(random.Random(6))
    clock_lock = threading.Lock()
    ticks = iter(range(1, 100_000))
    per_thread: list[list[int]] = [[] for _ in range(4)]

    def scrape(seen: list[int]) -> None:
        for _ in range(200):
            with clock_lock:
                now = float(next(ticks))
            reading = model.read(now, [PROFILES["training"]])
            seen.append(int(reading["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]))

    threads = [threading.Thread(target=scrape, args=(seen,)) for seen in per_thread]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seen in per_thread:
        assert len(seen) == 200
        assert all(b >= a for a, b in itertools.pairwise(seen))
    final = int(model.read(100_000.0, [])["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"])
    assert final >= max(max(seen) for seen in per_thread)


def test_identities_are_deterministic_and_shaped_like_dcgm() -> None:
    gpus = node_gpus("gpu-node-001", 8, h100.MODEL_NAME)
    assert gpus == node_gpus("gpu-node-001", 8, h100.MODEL_NAME)
    assert gpus[0].uuid != node_gpus("gpu-node-002", 1, h100.MODEL_NAME)[0].uuid
    assert [g.pci_bus_id for g in gpus[:2]] == ["00000000:18:00.0", "00000000:2A:00.0"]
    assert [g.device for g in gpus] == [f"nvidia{i}" for i in range(8)]
    assert len({g.uuid for g in gpus}) == 8
    uuid = gpu_uuid("n", 0)
    assert [len(part) for part in uuid.removeprefix("GPU-").split("-")] == [8, 4, 4, 4, 12]
    assert pci_bus_id(8) == "00000001:18:00.0"
