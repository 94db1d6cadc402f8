"""The packaged default counters and the collectors CSV parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.dcgm.counters import (
    DEFAULT_COUNTERS_PATH,
    THROTTLE_COUNTERS_PATH,
    CountersError,
    load_counters,
    parse_counters,
)
from lab.dcgm.gpu_model import EMULATED_FIELDS

# etc/default-counters.csv active rows for 4.5.3-4.8.2 (field, type, help as written upstream).
EXPECTED_DEFAULT = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
    ),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors",
    ),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gauge",
        "The rate of data received over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
    ),
]


def test_packaged_default_set_is_the_upstream_default_set_row_for_row() -> None:
    counters = load_counters(supported_fields=EMULATED_FIELDS)
    assert [(c.field_name, c.prom_type, c.help) for c in counters] == EXPECTED_DEFAULT


def test_packaged_file_names_its_upstream_source_in_a_header_comment() -> None:
    header = DEFAULT_COUNTERS_PATH.read_text().splitlines()[0]
    assert header.startswith("# Source: NVIDIA/dcgm-exporter etc/default-counters.csv")
    assert "at tag 4.5.3-4.8.2 (commit 691c9276" in DEFAULT_COUNTERS_PATH.read_text()


def test_every_emulated_field_is_in_the_default_set_or_the_throttle_profile() -> None:
    throttle = {c.field_name for c in load_counters(THROTTLE_COUNTERS_PATH, supported_fields=EMULATED_FIELDS)}
    assert {row[0] for row in EXPECTED_DEFAULT} | throttle == EMULATED_FIELDS
    assert throttle - {row[0] for row in EXPECTED_DEFAULT} == {
        "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
    }


def test_columns_are_trimmed_and_comments_skipped_like_upstream() -> None:
    text = "# Format,,\n\n  # indented hash is not a comment start in Go csv\n"
    with pytest.raises(CountersError, match="expected 3 columns"):
        parse_counters(text, source="x.csv")
    counters = parse_counters(
        "# c\nDCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilization (in %).\n", source="x.csv"
    )
    assert counters[0].field_name == "DCGM_FI_DEV_DEC_UTIL"
    assert counters[0].help == "Decoder utilization (in %)."


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("DCGM_FI_DEV_GPU_UTIL, gauge, a, b\n", r"x\.csv:1: expected 3 columns"),
        ("DCGM_FI_DEV_GPU_UTIL, histogram, help\n", r"x\.csv:1: Prometheus type 'histogram'"),
        (
            "DCGM_FI_DEV_NVSWITCH_TEMP, gauge, help\n",
            r"x\.csv:1: field DCGM_FI_DEV_NVSWITCH_TEMP is not emulated",
        ),
        ("DCGM_FI_DEV_GPU_UTIL, gauge, a\nDCGM_FI_DEV_GPU_UTIL, gauge, b\n", r"x\.csv:2: .* listed twice"),
        ("# only comments\n", "no counters"),
    ],
    ids=[
        "four columns",
        "unknown prometheus type",
        "field the shim cannot emulate",
        "duplicate row",
        "empty",
    ],
)
def test_bad_collectors_files_name_file_line_and_fix(text: str, message: str) -> None:
    with pytest.raises(CountersError, match=message):
        parse_counters(text, source="x.csv", supported_fields=EMULATED_FIELDS)


def test_missing_collectors_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CountersError, match="-f/--collectors"):
        load_counters(tmp_path / "nope.csv")
