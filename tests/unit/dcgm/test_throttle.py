"""A throttled GPU and its job's other GPUs, as signals/dcgm.md ("Throttled GPU") models them, and the
throttle fault file (``--throttle-dir``)."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.dcgm import h100
from lab.dcgm.counters import THROTTLE_COUNTERS_PATH, load_counters
from lab.dcgm.gpu_model import EMULATED_FIELDS
from lab.dcgm.node import EmulatedNode, NodeConfig
from lab.dcgm.throttle import (
    CAUSES,
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    SW_POWER_CAP,
    SW_THERMAL,
    read_throttle,
    write_throttle,
)

from .dcgm_testing import FakeClock

NODE = "dgx-001"
SCRAPE_S = 15.0
# GPUs 0 and 1 run job 10 (data-parallel, 2 GPUs), GPUs 2 and 3 job 11; GPU 4 is idle.
JOBS = {"0": "10", "1": "10", "2": "11", "3": "11"}

Medians = dict[tuple[str, str], float]


@pytest.fixture
def lab_node(tmp_path: Path, make_node: Callable[..., EmulatedNode]) -> EmulatedNode:
    mapping = tmp_path / "mapping"
    mapping.mkdir()
    for gpu, job in JOBS.items():
        (mapping / gpu).write_text(f"{job}\n")
    return make_node(name=NODE, gpus=5, mapping_dir=mapping, throttle_dir=tmp_path / "throttle")


def medians(node: EmulatedNode, clock: FakeClock, scrapes: int = 120) -> Medians:
    """Median of every (gpu, field) over ``scrapes`` scrapes 15 s apart, after 5 minutes to settle
    (the die temperature's time constant is 60 s)."""
    for _ in range(20):
        clock.advance(SCRAPE_S)
        node.samples()
    seen: dict[tuple[str, str], list[float]] = {}
    for _ in range(scrapes):
        clock.advance(SCRAPE_S)
        samples, _, _ = node.samples()
        for sample in samples:
            seen.setdefault((sample.gpu, sample.counter.field_name), []).append(float(sample.value))
    return {key: statistics.median(values) for key, values in seen.items()}


def throttle(node: EmulatedNode, gpu: int, cause: str | None) -> None:
    assert node.config.throttle_dir is not None
    write_throttle(node.config.throttle_dir, NODE, gpu, cause)


def test_the_causes_report_nvmls_clock_event_bits() -> None:
    # dcgm_fields.h DCGM_CLOCKS_EVENT_REASON_*; the tag copies them in clock_events_collector.go.
    assert (SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_POWER_BRAKE) == (0x04, 0x08, 0x20, 0x80)
    assert {name: cause.reasons for name, cause in CAUSES.items()} == {
        "power-brake": 0x88,
        "thermal": 0x20,
        "power-cap": 0x04,
    }


def test_a_power_brake_halves_the_sm_clock_and_the_job_waits_for_it(
    lab_node: EmulatedNode, clock: FakeClock
) -> None:
    healthy = medians(lab_node, clock)
    throttle(lab_node, 0, "power-brake")
    braked = medians(lab_node, clock)
    # The throttled GPU: "reducing the core clocks by a factor of 2 or more" (NVML).
    assert healthy["0", "DCGM_FI_DEV_SM_CLOCK"] == h100.SM_CLOCK_MAX_MHZ
    assert braked["0", "DCGM_FI_DEV_SM_CLOCK"] == h100.SM_CLOCK_MAX_MHZ / 2
    assert braked["0", "DCGM_FI_DEV_POWER_USAGE"] < 0.3 * healthy["0", "DCGM_FI_DEV_POWER_USAGE"]
    assert braked["0", "DCGM_FI_DEV_GPU_TEMP"] < healthy["0", "DCGM_FI_DEV_GPU_TEMP"] - 15
    # Its kernels keep running, only slower: utilisation and engine activity stay.
    assert braked["0", "DCGM_FI_DEV_GPU_UTIL"] >= 90
    assert braked["0", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"] > 0.85
    # The other GPU of job 10 waits at every all-reduce: half the tensor work, NVLink and power fall.
    for field in ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
        assert braked["1", field] == pytest.approx(healthy["1", field] / 2, rel=0.25), field
    assert (
        braked["1", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]
        < 0.65 * healthy["1", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]
    )
    assert braked["1", "DCGM_FI_DEV_POWER_USAGE"] < healthy["1", "DCGM_FI_DEV_POWER_USAGE"] - 60
    assert braked["1", "DCGM_FI_DEV_SM_CLOCK"] == h100.SM_CLOCK_MAX_MHZ
    assert braked["1", "DCGM_FI_DEV_GPU_UTIL"] >= 90
    # Job 11 and the idle GPU do not notice.
    for gpu in ("2", "3", "4"):
        for field in ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_POWER_USAGE"):
            assert braked[gpu, field] == pytest.approx(healthy[gpu, field], rel=0.15, abs=0.02), (gpu, field)


def test_a_power_cap_pins_power_at_the_cap_and_lowers_the_clock_to_fit(
    lab_node: EmulatedNode, clock: FakeClock
) -> None:
    throttle(lab_node, 2, "power-cap")
    capped = medians(lab_node, clock)
    assert capped["2", "DCGM_FI_DEV_POWER_USAGE"] == pytest.approx(350.0, abs=1.0)
    assert 1500 <= capped["2", "DCGM_FI_DEV_SM_CLOCK"] <= 1750
    assert capped["3", "DCGM_FI_DEV_SM_CLOCK"] == h100.SM_CLOCK_MAX_MHZ
    assert capped["0", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] > capped["3", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]


def test_a_thermal_slowdown_holds_the_die_hot_and_the_clock_at_three_quarters(
    lab_node: EmulatedNode, clock: FakeClock
) -> None:
    throttle(lab_node, 1, "thermal")
    hot = medians(lab_node, clock)
    assert hot["1", "DCGM_FI_DEV_GPU_TEMP"] == 87
    assert hot["1", "DCGM_FI_DEV_SM_CLOCK"] == 1485
    assert hot["1", "DCGM_FI_DEV_POWER_USAGE"] < 320
    assert hot["0", "DCGM_FI_DEV_GPU_TEMP"] < 70


def test_clearing_restores_the_gpu_and_its_job(lab_node: EmulatedNode, clock: FakeClock) -> None:
    healthy = medians(lab_node, clock)
    throttle(lab_node, 0, "power-brake")
    medians(lab_node, clock, scrapes=4)
    throttle(lab_node, 0, None)
    restored = medians(lab_node, clock)
    for gpu in ("0", "1"):
        for field in ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_POWER_USAGE"):
            assert restored[gpu, field] == pytest.approx(healthy[gpu, field], rel=0.15), (gpu, field)
    assert restored["0", "DCGM_FI_DEV_GPU_TEMP"] == pytest.approx(healthy["0", "DCGM_FI_DEV_GPU_TEMP"], abs=3)


def test_a_throttled_idle_gpu_stays_at_idle_clocks(lab_node: EmulatedNode, clock: FakeClock) -> None:
    throttle(lab_node, 4, "power-brake")
    idle = medians(lab_node, clock, scrapes=10)
    assert idle["4", "DCGM_FI_DEV_SM_CLOCK"] == h100.SM_CLOCK_IDLE_MHZ


@pytest.mark.parametrize("cause", sorted(CAUSES))
def test_values_stay_inside_their_documented_ranges_and_formats(
    lab_node: EmulatedNode, clock: FakeClock, cause: str
) -> None:
    throttle(lab_node, 0, cause)
    for _ in range(40):
        clock.advance(SCRAPE_S)
        samples, _, _ = lab_node.samples()
        for s in samples:
            name, value = s.counter.field_name, float(s.value)
            if name == "DCGM_FI_DEV_SM_CLOCK":
                assert h100.SM_CLOCK_IDLE_MHZ <= value <= h100.SM_CLOCK_MAX_MHZ and value % 15 == 0
            elif name == "DCGM_FI_DEV_POWER_USAGE":
                assert 60 <= value <= h100.TDP_W and s.value.count(".") == 1
            elif name.startswith("DCGM_FI_PROF_") and "PCIE" not in name:
                assert 0 <= value <= 1 and len(s.value.split(".")[1]) == 6
            elif name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":
                assert 0 <= value <= h100.NVLINK_MAX_MBPS and s.value.isdigit()


def profile_node(tmp_path: Path, clock: FakeClock, log: logging.Logger) -> EmulatedNode:
    mapping = tmp_path / "mapping"
    mapping.mkdir()
    for gpu, job in JOBS.items():
        (mapping / gpu).write_text(f"{job}\n")
    counters = load_counters(THROTTLE_COUNTERS_PATH, supported_fields=EMULATED_FIELDS)
    config = NodeConfig(name=NODE, gpus=5, mapping_dir=mapping, throttle_dir=tmp_path / "throttle")
    return EmulatedNode(config, counters, clock=clock, log=log)


def violation_rates(node: EmulatedNode, clock: FakeClock) -> dict[tuple[str, str], float]:
    """Seconds of violation per second of wall time over 40 scrapes."""

    def totals() -> dict[tuple[str, str], int]:
        samples, _, _ = node.samples()
        return {
            (s.gpu, s.counter.field_name): int(s.value)
            for s in samples
            if "VIOLATION" in s.counter.field_name
        }

    clock.advance(SCRAPE_S)
    start = totals()
    for _ in range(40):
        clock.advance(SCRAPE_S)
        end = totals()
    return {key: (end[key] - start[key]) / 1e9 / (40 * SCRAPE_S) for key in end}


def test_the_throttle_profile_counts_violation_time_of_its_cause(
    tmp_path: Path, clock: FakeClock, node_log: logging.Logger
) -> None:
    node = profile_node(tmp_path, clock, node_log)
    write_throttle(tmp_path / "throttle", NODE, 0, "power-cap")
    write_throttle(tmp_path / "throttle", NODE, 2, "thermal")
    write_throttle(tmp_path / "throttle", NODE, 3, "power-brake")
    rates = violation_rates(node, clock)
    # Violation counters count ns while the cause holds the clock down (stalled steps run no kernels).
    assert rates["0", "DCGM_FI_DEV_POWER_VIOLATION"] > 0.9
    assert rates["2", "DCGM_FI_DEV_THERMAL_VIOLATION"] > 0.9
    assert rates["2", "DCGM_FI_DEV_POWER_VIOLATION"] == 0
    assert rates["0", "DCGM_FI_DEV_THERMAL_VIOLATION"] == 0
    # A power brake is neither (DCGM counts it in a field the tag's CSV does not carry).
    assert rates["3", "DCGM_FI_DEV_POWER_VIOLATION"] == rates["3", "DCGM_FI_DEV_THERMAL_VIOLATION"] == 0
    assert rates["4", "DCGM_FI_DEV_POWER_VIOLATION"] == rates["4", "DCGM_FI_DEV_THERMAL_VIOLATION"] == 0


def test_the_default_set_serves_no_violation_counter(lab_node: EmulatedNode) -> None:
    assert "VIOLATION" not in lab_node.scrape()


@pytest.mark.parametrize(
    ("content", "logged"),
    [
        (b"hot\n", "must hold one of power-brake, thermal, power-cap, got 'hot'"),
        (b"", "got ''"),
        (b"\xff\xfe\n", "Cannot read throttle file"),
        (b"power-brake thermal\n", "got 'power-brake thermal'"),
    ],
)
def test_a_bad_file_is_logged_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, logged: str
) -> None:
    (tmp_path / NODE).mkdir()
    (tmp_path / NODE / "0").write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert read_throttle(tmp_path, NODE, 0, logging.getLogger("t")) is None
    assert logged in caplog.text
    assert str(tmp_path / NODE / "0") in caplog.text


def test_a_directory_in_place_of_the_file_is_logged_and_the_scrape_goes_on(
    lab_node: EmulatedNode, caplog: pytest.LogCaptureFixture
) -> None:
    assert lab_node.config.throttle_dir is not None
    (lab_node.config.throttle_dir / NODE / "1").mkdir(parents=True)
    with caplog.at_level(logging.WARNING):
        assert "DCGM_FI_DEV_SM_CLOCK" in lab_node.scrape()
    assert "Cannot read throttle file" in caplog.text


def test_no_file_or_no_directory_is_no_throttle(tmp_path: Path) -> None:
    assert read_throttle(tmp_path / "absent", NODE, 0, logging.getLogger("t")) is None
    write_throttle(tmp_path, NODE, 0, "thermal")
    assert read_throttle(tmp_path, NODE, 0, logging.getLogger("t")) is CAUSES["thermal"]
    write_throttle(tmp_path, NODE, 0, None)
    assert read_throttle(tmp_path, NODE, 0, logging.getLogger("t")) is None


def test_the_writer_refuses_an_unknown_cause(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="use one of power-brake, thermal, power-cap"):
        write_throttle(tmp_path, NODE, 0, "hot")
    assert not (tmp_path / NODE).exists()
