"""Physical constants of an NVIDIA H100 SXM5 80GB, each with its basis.

Sources: NVIDIA H100 Tensor Core GPU datasheet (SXM5 column); nvidia-smi captures of 8x H100 SXM
HGX servers in NVIDIA/nccl issues #1264 (driver 550.54.15) and #1967 (driver 560.35.03); a real
dcgm-exporter scrape of an H100 at github.com/NVIDIA/dcgm-exporter/issues/490. Values marked PENDING have no
capture yet; signals/dcgm.md lists them.
"""

from __future__ import annotations

# modelName as DCGM reports it: "NVIDIA H100 80GB HBM3" in the H100 scrape at
# github.com/NVIDIA/dcgm-exporter/issues/490 and in the nvidia-smi Name column of nccl #1264/#1967.
MODEL_NAME = "NVIDIA H100 80GB HBM3"

# DCGM_FI_DRIVER_VERSION="580.95.05" in a real late-2025 dcgm-exporter scrape of an H100 (vGPU
# "NVIDIA H100-20C", tests/fixtures/dcgm-exporter-4.5.3-4.8.2/h100-20c-kubernetes-vks.prom).
DRIVER_VERSION = "580.95.05"

# Datasheet: "Max Thermal Design Power (TDP) Up to 700W" (SXM); nvidia-smi cap "700W" (nccl #1264).
TDP_W = 700.0
# Idle draw: 88 W / 83 W (nccl #1264) and 69 W / 71 W (nccl #1967) at P0 with no work.
IDLE_POWER_W = 72.0
IDLE_POWER_SD_W = 3.0

# nvidia-smi "Memory-Usage ... / 81559MiB" for H100 80GB HBM3 (nccl #1264, #1967).
FB_TOTAL_MIB = 81559
# FB_RESERVED (driver-reserved framebuffer) is not in any capture here: PENDING. 580 MiB is the
# order of magnitude nvidia-smi -q shows as "Reserved" on 80 GB parts; FREE+USED+RESERVED=TOTAL.
FB_RESERVED_MIB = 580

# Max SM boost 1980 MHz and HBM3 memory clock 2619 MHz of H100 SXM: the lab's assumed nvidia-smi
# max clocks, with no capture here yet: PENDING in signals/dcgm.md.
SM_CLOCK_MAX_MHZ = 1980
MEM_CLOCK_MHZ = 2619
# Idle SM clock with no work in P0: PENDING a capture; 345 MHz is the lowest supported H100 SM clock
# in nvidia-smi -q -d SUPPORTED_CLOCKS listings.
SM_CLOCK_IDLE_MHZ = 345
# GPU clocks move in 15 MHz steps (supported-clocks tables).
CLOCK_STEP_MHZ = 15
# Under sustained load near the power cap H100 SXM runs below max boost; lab scheme: drop linearly
# from 1980 MHz at 85 % of TDP to 1755 MHz at 100 % (PENDING a capture).
SM_CLOCK_AT_TDP_MHZ = 1755

# Temperatures: idle 27-31 C (nccl #1264/#1967). Loaded air-cooled HGX H100 run ~60-75 C: the lab
# maps power linearly (0.065 C/W over idle, 31 C + 630 W * 0.065 = 72 C at TDP).
GPU_TEMP_IDLE_C = 29.0
GPU_TEMP_C_PER_W = 0.065
# HBM runs a few degrees above the GPU die at idle and more under memory traffic (lab scheme).
MEM_TEMP_OFFSET_C = 3.0
MEM_TEMP_C_PER_DRAM_ACTIVE = 12.0
# First-order thermal lag; heatsink time constant of the order of a minute (lab scheme).
THERMAL_TAU_S = 60.0

# NVLink 4: 18 links, 900 GB/s total bidirectional (datasheet). DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL
# is a throughput in MB/s (upstream's later CSV help: "Aggregate NVLink throughput across all lanes
# (in MB/s)", commit 8dc9e11b), so its ceiling is 900_000.
NVLINK_MAX_MBPS = 900_000.0
# PCIe Gen5 x16: 64 GB/s per direction (datasheet "PCIe Gen5: 128GB/s" total).
PCIE_MAX_BYTES_PER_S = 64e9
# Replays on a healthy Gen5 link are rare; lab scheme: one per GPU-week on average.
PCIE_REPLAY_RATE_PER_S = 1.0 / (7 * 86400)
# Energy since boot at first scrape: uptime drawn from 1 to 30 days at idle power (lab scheme).
BOOT_UPTIME_RANGE_S = (86400.0, 30 * 86400.0)
