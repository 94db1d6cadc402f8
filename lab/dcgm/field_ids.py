"""DCGM field ids of the fields the shim emulates, as dcgm-exporter 4.5.3-4.8.2 looks them up.

The tag resolves each CSV row's name with ``dcgm.GetFieldID`` (``internal/pkg/counters/
counter_config.go@4.5.3-4.8.2:110``) from go-dcgm at the pseudo-version its ``go.mod`` requires
(``v0.0.0-20260422145128-ec245c09fe3e``): the ``Short`` constants of ``pkg/dcgm/const_fields.go``,
and ``legacyDCGMFields`` there for ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL``. The id is the first field
of ``counters.Counter``, so it orders the families of a scrape (see :mod:`lab.dcgm.rendermetrics`).
A unit test checks every id against the vendored go-dcgm text.
"""

from __future__ import annotations

FIELD_IDS: dict[str, int] = {
    "DCGM_FI_DRIVER_VERSION": 1,
    "DCGM_FI_DEV_SM_CLOCK": 100,
    "DCGM_FI_DEV_MEM_CLOCK": 101,
    "DCGM_FI_DEV_MEMORY_TEMP": 140,
    "DCGM_FI_DEV_GPU_TEMP": 150,
    "DCGM_FI_DEV_POWER_USAGE": 155,
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": 156,
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 202,
    "DCGM_FI_DEV_GPU_UTIL": 203,
    "DCGM_FI_DEV_MEM_COPY_UTIL": 204,
    "DCGM_FI_DEV_ENC_UTIL": 206,
    "DCGM_FI_DEV_DEC_UTIL": 207,
    "DCGM_FI_DEV_XID_ERRORS": 230,
    "DCGM_FI_DEV_POWER_VIOLATION": 240,
    "DCGM_FI_DEV_THERMAL_VIOLATION": 241,
    "DCGM_FI_DEV_FB_FREE": 251,
    "DCGM_FI_DEV_FB_USED": 252,
    "DCGM_FI_DEV_FB_RESERVED": 253,
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 393,
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 394,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": 395,
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": 449,
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": 526,
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 1001,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 1004,
    "DCGM_FI_PROF_DRAM_ACTIVE": 1005,
    "DCGM_FI_PROF_PCIE_TX_BYTES": 1009,
    "DCGM_FI_PROF_PCIE_RX_BYTES": 1010,
}
