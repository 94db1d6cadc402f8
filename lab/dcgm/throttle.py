"""Throttled GPUs: the clock-event causes the shim emulates, and the lab's throttle-fault directory.

A throttled H100 keeps running its kernels, only slower: the SM clock drops, board power and heat
follow it, and in a synchronous data-parallel job every other GPU of the job waits for it at each
all-reduce (the straggler effect, :mod:`lab.dcgm.gpu_model`). Each cause is one of NVML's clock event
reasons; its bits are those of ``DCGM_CLOCKS_EVENT_REASON_*`` in go-dcgm's ``dcgm_fields.h`` at the
version dcgm-exporter 4.5.3-4.8.2 requires, which the tag copies into
``internal/pkg/collector/clock_events_collector.go``. The tag's collectors CSV carries no reasons
field (neither active nor commented out), so the bits are the cause's identity here, not a value the
shim serves; the opt-in violation counters (``throttle-counters.csv``) are what a site would see.

Fault injection (lab-only, ``--throttle-dir DIR``): the file ``DIR/<node>/<gpu>`` holds one cause
name. Removing the file clears the throttle: unlike the last XID, a clock event lasts only while its
cause does (NVML reports the reasons active now).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from lab.dcgm.fault_files import read_fault, write_fault

# DCGM_CLOCKS_EVENT_REASON_* (dcgm_fields.h; nvmlClocksEventReasons in the NVML API reference).
SW_POWER_CAP = 0x04  # "clocks have been optimized to ensure not to exceed currently set power limits"
HW_SLOWDOWN = 0x08  # "reducing the core clocks by a factor of 2 or more"; also set on a power brake
SW_THERMAL = 0x20  # GPU temperature held at or below "GPU Max Operating Temperature"
HW_POWER_BRAKE = 0x80  # "External Power Brake Assertion being triggered (e.g. by the system power supply)"


@dataclass(frozen=True, slots=True)
class Cause:
    """One way an H100 slows down, as the shim models it (bases in signals/dcgm.md)."""

    name: str
    reasons: int  # the clock-event bits NVML/DCGM report while it lasts
    # SM clock as a share of the clock the GPU would run unthrottled; None: set by power_cap_w.
    clock_share: float | None
    # Board power limit the SW power cap holds the GPU at; None: no cap of its own.
    power_cap_w: float | None
    # Die temperature the cause holds the GPU at; None: temperature follows power.
    gpu_temp_c: float | None
    help: str


# What each cause does; numbers carry their basis (signals/dcgm.md, "Throttled GPU").
CAUSES: dict[str, Cause] = {
    cause.name: cause
    for cause in (
        # NVML: HW power brake slowdown reduces "the core clocks by a factor of 2 or more": 1980 → 990 MHz.
        Cause(
            "power-brake",
            HW_SLOWDOWN | HW_POWER_BRAKE,
            0.5,
            None,
            None,
            "external power brake (PSU): SM clock halved, power and temperature fall",
        ),
        # SW thermal slowdown: a cooling fault holds the die at H100's max operating temperature
        # (87 C, PENDING a capture) and trades clock for it; 75 % of max clock is the lab's share.
        Cause(
            "thermal",
            SW_THERMAL,
            0.75,
            None,
            87.0,
            "cooling fault: die held at 87 C, SM clock at 75 %, power falls with the clock",
        ),
        # SW power cap at 350 W, half the 700 W TDP (nvidia-smi -pl; the lab's cap, PENDING a site's).
        Cause(
            "power-cap",
            SW_POWER_CAP,
            None,
            350.0,
            None,
            "power limit 350 W: power pinned at the cap, SM clock lowered until it fits",
        ),
    )
}


def write_throttle(throttle_dir: Path, node: str, gpu: int, cause: str | None) -> Path:
    """Throttle ``node``'s GPU ``gpu`` by ``cause`` (None clears it), atomically: the shim never reads
    half a name. Mode 0644: the shim reads it as its own user."""
    if cause is None:
        path = throttle_dir / node / str(gpu)
        path.unlink(missing_ok=True)
        return path
    if cause not in CAUSES:
        raise ValueError(f"unknown throttle cause {cause!r}; use one of {', '.join(CAUSES)}")
    return write_fault(throttle_dir, node, gpu, cause)


def read_throttle(throttle_dir: Path, node: str, gpu: int, log: logging.Logger) -> Cause | None:
    """The cause in ``throttle_dir/node/gpu``, or None when the GPU is not throttled.

    A bad file is logged and ignored: fault injection must never fail a scrape.
    """
    text = read_fault(throttle_dir, node, gpu, "throttle", log)
    if text is None:
        return None
    path = throttle_dir / node / str(gpu)
    cause = CAUSES.get(text)
    if cause is None:
        log.warning(
            "Throttle file %s must hold one of %s, got %r; ignored", path, ", ".join(CAUSES), text[:80]
        )
    return cause
