"""Values of one emulated H100 over time: what DCGM would report for each default counter.

One ``GpuModel`` per (node, GPU) keeps the state a real GPU has between scrapes: energy since boot,
PCIe replays, remapped rows, the last XID, die and HBM temperature (first-order lag), and the
framebuffer a job holds. Gauges are drawn per scrape from the workload profile of the jobs on the
GPU (seeded ``random.Random``, bounded by clipping); counters only move forward. Thread-safe: a
lock per GPU, because concurrent scrapes of one node read the same GPUs.

A throttled GPU (:mod:`lab.dcgm.throttle`) runs its kernels at a lower SM clock, and the other GPUs of
its job wait for it at every all-reduce (``straggle``: the share of the step they still compute).

Values come out as the collector formats DCGM values: ``%d`` for int64 fields, ``%f`` for doubles.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

from lab.dcgm import h100
from lab.dcgm.samples import collector_value
from lab.dcgm.throttle import SW_POWER_CAP, SW_THERMAL, Cause
from lab.dcgm.workloads import Spread, WorkloadProfile

# DCGM field types (dcgm_fields.h): these are DCGM_FT_DOUBLE, every other emulated field is int64.
DOUBLE_FIELDS = frozenset(
    {
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
    }
)
INT_FIELDS = frozenset(
    {
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    }
    | {
        # Opt-in (lab/dcgm/throttle-counters.csv): the tag's CSV carries them commented out.
        "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
    }
)
LABEL_FIELDS = frozenset({"DCGM_FI_DRIVER_VERSION"})
EMULATED_FIELDS = DOUBLE_FIELDS | INT_FIELDS | LABEL_FIELDS

# XID 63 "ECC page retirement or row remapping recording event" and 64 "... recording failure"
# (xid_errors.go) also move the remapped-row fields, as a remap does on a real H100 (lab scheme).
XID_ROW_REMAP_EVENT = 63
XID_ROW_REMAP_FAILURE = 64


def _clip(value: float, low: float, high: float) -> float:
    return min(high, max(low, value))


def _clock_step(mhz: float) -> int:
    return int(round(mhz / h100.CLOCK_STEP_MHZ) * h100.CLOCK_STEP_MHZ)


def _dynamic_power(power: float, share: float) -> float:
    """Board power at ``share`` of the SM clock: the dynamic part (over idle) scales with f·V², and
    V follows f along the DVFS curve, so with f³ (lab scheme, PENDING a measured H100 curve)."""
    return h100.IDLE_POWER_W + (power - h100.IDLE_POWER_W) * share**3


def _share_under_cap(power: float, cap: float) -> float:
    """The clock share at which the f³ power curve fits under ``cap``."""
    if power <= cap:
        return 1.0
    return float(((cap - h100.IDLE_POWER_W) / (power - h100.IDLE_POWER_W)) ** (1.0 / 3.0))


@dataclass(frozen=True, slots=True)
class _Activity:
    gpu_util: float  # percent
    gr_active: float
    tensor_active: float
    dram_active: float
    mem_copy_util: float
    nvlink_mbps: float
    pcie_bytes_per_s: float


def _waiting(activity: _Activity, straggle: float) -> _Activity:
    """A GPU of a synchronous data-parallel job whose slowest rank is throttled: it computes its
    share of the step at full speed, then waits in the all-reduce for the straggler (every rank waits
    for the slowest, signals/dcgm.md). Tensor-pipe, DRAM and NVLink traffic per second fall to the
    computing share; the NCCL kernel stays resident while it waits, so GPU_UTIL and the graphics
    engine ratio do not (lab reading, PENDING a capture)."""
    return replace(
        activity,
        tensor_active=activity.tensor_active * straggle,
        dram_active=activity.dram_active * straggle,
        mem_copy_util=activity.mem_copy_util * straggle,
        nvlink_mbps=activity.nvlink_mbps * straggle,
        pcie_bytes_per_s=activity.pcie_bytes_per_s * straggle,
    )


class GpuModel:
    """State and value model of one H100."""

    def __init__(self, rng: random.Random, *, driver_version: str = h100.DRIVER_VERSION) -> None:
        self._rng = rng
        self._lock = threading.Lock()
        self.driver_version = driver_version
        uptime = rng.uniform(*h100.BOOT_UPTIME_RANGE_S)
        self._energy_mj = uptime * h100.IDLE_POWER_W * 1000.0
        self._last_time: float | None = None
        self._last_power = h100.IDLE_POWER_W
        self._gpu_temp = h100.GPU_TEMP_IDLE_C
        self._mem_temp = h100.GPU_TEMP_IDLE_C + h100.MEM_TEMP_OFFSET_C
        self._pcie_replays = 0
        self._pcie_injected = 0.0  # replays of an injected link fault, fractions carried to the next read
        self._uncorrectable_rows = 0
        self._correctable_rows = 0
        self._remap_failure = 0
        self._last_xid = 0
        self._allocation: tuple[str, ...] = ()
        self._fb_used = 0.0
        self._power_violation_ns = 0
        self._thermal_violation_ns = 0
        # SM clock share of the last read against the unthrottled clock (1.0: not throttled).
        self.clock_share = 1.0

    def _draw(self, spread: Spread, low: float, high: float) -> float:
        mean, sd = spread
        return _clip(self._rng.gauss(mean, sd) if sd > 0 else mean, low, high)

    def _activity(self, profile: WorkloadProfile | None) -> _Activity:
        if profile is None:
            # Idle H100: no kernels, a trickle of PCIe from the driver and monitoring.
            return _Activity(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, self._draw((2e4, 5e3), 0.0, 1e5))
        if self._rng.random() < profile.stall_fraction:
            pcie = self._draw(profile.pcie_bytes_per_s, 0.0, h100.PCIE_MAX_BYTES_PER_S) * 0.1
            return _Activity(0.0, 0.0, 0.0, self._draw((0.01, 0.005), 0.0, 0.05), 0.0, 0.0, pcie)
        util = round(self._draw(profile.gpu_util_pct, 1.0, 100.0))
        busy = util / 100.0
        sm_active = self._draw(profile.sm_active, 0.0, 1.0)
        return _Activity(
            gpu_util=float(util),
            gr_active=_clip(busy * self._draw((0.97, 0.02), 0.85, 1.0), 0.0, 1.0),
            tensor_active=min(sm_active, self._draw(profile.tensor_active, 0.0, 1.0)) * busy,
            dram_active=self._draw(profile.dram_active, 0.0, 1.0) * busy,
            mem_copy_util=self._draw(profile.mem_copy_util_pct, 0.0, 100.0) * busy,
            nvlink_mbps=self._draw(profile.nvlink_mbps, 0.0, h100.NVLINK_MAX_MBPS) * busy,
            pcie_bytes_per_s=self._draw(profile.pcie_bytes_per_s, 0.0, h100.PCIE_MAX_BYTES_PER_S),
        )

    def _power(self, activity: _Activity) -> float:
        idle = self._draw((h100.IDLE_POWER_W, h100.IDLE_POWER_SD_W), 60.0, 95.0)
        # Board power follows engine, tensor-pipe and HBM activity (lab weighting 0.4/0.35/0.25).
        load = (
            0.40 * activity.gr_active
            + 0.35 * min(1.0, activity.tensor_active / 0.5)
            + 0.25 * min(1.0, activity.dram_active / 0.6)
        )
        return _clip(idle + (h100.TDP_W - idle) * load + self._rng.gauss(0.0, 5.0), 60.0, h100.TDP_W)

    def _sm_clock(self, activity: _Activity, power: float) -> int:
        if activity.gpu_util == 0:
            return h100.SM_CLOCK_IDLE_MHZ
        share = power / h100.TDP_W
        drop = (h100.SM_CLOCK_MAX_MHZ - h100.SM_CLOCK_AT_TDP_MHZ) * _clip((share - 0.85) / 0.15, 0, 1)
        return _clock_step(h100.SM_CLOCK_MAX_MHZ - drop)

    def _throttle(
        self, activity: _Activity, power: float, throttle: Cause | None
    ) -> tuple[_Activity, float, int, int]:
        """Activity, power, SM clock and active clock-event reasons of this scrape."""
        clock = self._sm_clock(activity, power)
        reasons = SW_POWER_CAP if h100.SM_CLOCK_IDLE_MHZ < clock < h100.SM_CLOCK_MAX_MHZ else 0
        if throttle is None or activity.gpu_util == 0:
            # A stalled step (data loading, checkpoint) runs no kernels: nothing to slow down; the
            # share of the last busy scrape still paces the job.
            if throttle is None:
                self.clock_share = 1.0
            return activity, power, clock, reasons
        if throttle.power_cap_w is not None:
            share = _share_under_cap(power, throttle.power_cap_w)
        else:
            share = throttle.clock_share if throttle.clock_share is not None else 1.0
        self.clock_share = share
        power = _dynamic_power(power, share)
        if throttle.power_cap_w is not None:
            power = min(power, throttle.power_cap_w)
        clock = min(self._sm_clock(activity, power), _clock_step(h100.SM_CLOCK_MAX_MHZ * share))
        # The straggler's kernels issue the same work per step over a longer step: its memory and
        # NVLink traffic per second fall with its clock; engine and tensor-pipe ratios per cycle do not.
        activity = replace(
            activity,
            dram_active=activity.dram_active * share,
            mem_copy_util=activity.mem_copy_util * share,
            nvlink_mbps=activity.nvlink_mbps * share,
            pcie_bytes_per_s=activity.pcie_bytes_per_s * share,
        )
        return activity, power, clock, throttle.reasons  # the cause's reasons, while it holds

    def _advance(
        self,
        now: float,
        power: float,
        activity: _Activity,
        reasons: int,
        hold_temp_c: float | None,
        replays_per_min: int | None,
    ) -> None:
        # A concurrent scrape that sampled its clock earlier than the last one adds no time.
        dt = 0.0 if self._last_time is None else max(0.0, now - self._last_time)
        self._last_time = now if self._last_time is None else max(now, self._last_time)
        # Trapezoidal integration of board power over wall time between scrapes: W * s * 1000 = mJ.
        self._energy_mj += (self._last_power + power) / 2.0 * dt * 1000.0
        self._last_power = power
        # Violation counters: time (ns) spent with clocks held down by power or by temperature, the
        # state seen now taken for the whole interval since the last scrape.
        if reasons & SW_POWER_CAP:
            self._power_violation_ns += int(dt * 1e9)
        if reasons & SW_THERMAL:
            self._thermal_violation_ns += int(dt * 1e9)
        alpha = 1.0 - math.exp(-dt / h100.THERMAL_TAU_S)
        gpu_target = h100.GPU_TEMP_IDLE_C + (power - h100.IDLE_POWER_W) * h100.GPU_TEMP_C_PER_W
        if hold_temp_c is not None:
            gpu_target = hold_temp_c
        mem_target = (
            gpu_target + h100.MEM_TEMP_OFFSET_C + activity.dram_active * h100.MEM_TEMP_C_PER_DRAM_ACTIVE
        )
        self._gpu_temp += (gpu_target - self._gpu_temp) * alpha
        self._mem_temp += (mem_target - self._mem_temp) * alpha
        if dt > 0 and self._rng.random() < 1.0 - math.exp(-h100.PCIE_REPLAY_RATE_PER_S * dt):
            self._pcie_replays += 1
        if replays_per_min:
            # A failing link replays steadily: its rate times the time since the last read.
            self._pcie_injected += replays_per_min / 60.0 * dt
            whole = int(self._pcie_injected)
            self._pcie_replays += whole
            self._pcie_injected -= whole

    def _apply_xid(self, injected: int | None) -> None:
        if injected is None or injected == self._last_xid:
            return
        self._last_xid = injected
        if injected == XID_ROW_REMAP_EVENT:
            self._uncorrectable_rows += 1
        elif injected == XID_ROW_REMAP_FAILURE:
            self._remap_failure = 1

    def _framebuffer(self, allocation: tuple[str, ...], profile: WorkloadProfile | None) -> int:
        if allocation != self._allocation:
            # A new set of jobs allocates its memory once; it stays while the jobs run.
            self._allocation = allocation
            limit = h100.FB_TOTAL_MIB - h100.FB_RESERVED_MIB
            self._fb_used = 0.0 if profile is None else self._draw(profile.fb_used_mib, 500.0, limit)
        return int(self._fb_used)

    def read(
        self,
        now: float,
        workloads: Sequence[WorkloadProfile],
        *,
        allocation: tuple[str, ...] = (),
        injected_xid: int | None = None,
        throttle: Cause | None = None,
        straggle: float = 1.0,
        pcie_replays_per_min: int | None = None,
    ) -> dict[str, str]:
        """One scrape's values, keyed by DCGM field name, formatted like the collector does.

        ``throttle``: this GPU's clock-event cause; ``straggle`` (0-1]: the share of each step this
        GPU still computes while its job waits for a throttled GPU at the all-reduce;
        ``pcie_replays_per_min``: an injected link fault's replays (:mod:`lab.dcgm.pcie`)."""
        profile = max(workloads, key=lambda p: p.rank) if workloads else None
        with self._lock:
            activity = self._activity(profile)
            if straggle < 1.0 and activity.gpu_util > 0:
                activity = _waiting(activity, straggle)
            power = self._power(activity)
            activity, power, clock, reasons = self._throttle(activity, power, throttle)
            hold_temp = throttle.gpu_temp_c if throttle else None
            self._advance(now, power, activity, reasons, hold_temp, pcie_replays_per_min)
            self._apply_xid(injected_xid)
            fb_used = self._framebuffer(allocation, profile)
            ints = {
                "DCGM_FI_DEV_SM_CLOCK": clock,
                "DCGM_FI_DEV_MEM_CLOCK": h100.MEM_CLOCK_MHZ,
                "DCGM_FI_DEV_MEMORY_TEMP": round(self._mem_temp),
                "DCGM_FI_DEV_GPU_TEMP": round(self._gpu_temp),
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": int(self._energy_mj),
                "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": self._pcie_replays,
                "DCGM_FI_DEV_GPU_UTIL": int(activity.gpu_util),
                "DCGM_FI_DEV_MEM_COPY_UTIL": round(activity.mem_copy_util),
                # H100 SXM has no NVENC (datasheet: NVDEC/NVJPG only) and AI jobs do not decode video.
                "DCGM_FI_DEV_ENC_UTIL": 0,
                "DCGM_FI_DEV_DEC_UTIL": 0,
                "DCGM_FI_DEV_XID_ERRORS": self._last_xid,
                "DCGM_FI_DEV_POWER_VIOLATION": self._power_violation_ns,
                "DCGM_FI_DEV_THERMAL_VIOLATION": self._thermal_violation_ns,
                "DCGM_FI_DEV_FB_FREE": h100.FB_TOTAL_MIB - h100.FB_RESERVED_MIB - fb_used,
                "DCGM_FI_DEV_FB_USED": fb_used,
                "DCGM_FI_DEV_FB_RESERVED": h100.FB_RESERVED_MIB,
                "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": round(activity.nvlink_mbps),
                # Bare-metal GPU, no vGPU licence (0 = unlicensed).
                "DCGM_FI_DEV_VGPU_LICENSE_STATUS": 0,
                "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": self._uncorrectable_rows,
                "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": self._correctable_rows,
                "DCGM_FI_DEV_ROW_REMAP_FAILURE": self._remap_failure,
                # Receive carries the input data; transmit a little less (lab scheme).
                "DCGM_FI_PROF_PCIE_TX_BYTES": round(activity.pcie_bytes_per_s * 0.6),
                "DCGM_FI_PROF_PCIE_RX_BYTES": round(activity.pcie_bytes_per_s),
            }
        values = {name: collector_value(int(value)) for name, value in ints.items()}
        values["DCGM_FI_DEV_POWER_USAGE"] = collector_value(float(power))
        values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] = collector_value(float(activity.gr_active))
        values["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] = collector_value(float(activity.tensor_active))
        values["DCGM_FI_PROF_DRAM_ACTIVE"] = collector_value(float(activity.dram_active))
        values["DCGM_FI_DRIVER_VERSION"] = self.driver_version
        return values
