"""PCIe replay injection: a link that keeps resending packets its receiver rejected.

A marginal PCIe link (a riser, a retimer, a card not seated) corrupts packets; the link layer resends
each one and NVML counts the resends in the GPU's replay counter (``DCGM_FI_DEV_PCIE_REPLAY_COUNTER``,
a default counter of dcgm-exporter 4.5.3-4.8.2). The transfers succeed, slower. DCGM's health watch
warns when the counter grows by more than 8 in a minute (signals/dcgm.md, "PCIe replays").

Fault injection (lab-only, ``--pcie-replay-dir DIR``): the file ``DIR/<node>/<gpu>`` holds the extra
replays per minute on top of the healthy rate. Removing the file ends them; the counter keeps what it
counted, as NVML's does until the driver reloads.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lab.dcgm.fault_files import read_fault, write_fault

# A link replaying faster than this resends more than it carries; no one injects more on purpose.
MAX_REPLAYS_PER_MIN = 100_000


def write_pcie_replays(pcie_dir: Path, node: str, gpu: int, per_minute: int) -> Path:
    """Make ``node``'s GPU ``gpu`` replay ``per_minute`` times a minute (0 ends it), atomically."""
    path = pcie_dir / node / str(gpu)
    if per_minute == 0:
        path.unlink(missing_ok=True)
        return path
    if not 0 < per_minute <= MAX_REPLAYS_PER_MIN:
        raise ValueError(f"replays per minute must be 0..{MAX_REPLAYS_PER_MIN}, got {per_minute}")
    return write_fault(pcie_dir, node, gpu, str(per_minute))


def read_pcie_replays(pcie_dir: Path, node: str, gpu: int, log: logging.Logger) -> int | None:
    """The replays per minute in ``pcie_dir/node/gpu``, or None when the link is healthy.

    A bad file is logged and ignored: fault injection must never fail a scrape."""
    text = read_fault(pcie_dir, node, gpu, "PCIe replay", log)
    if text is None:
        return None
    if text.isdigit() and 0 < int(text) <= MAX_REPLAYS_PER_MIN:
        return int(text)
    log.warning(
        "PCIe replay file %s must hold replays per minute (1..%d), got %r; ignored",
        pcie_dir / node / str(gpu),
        MAX_REPLAYS_PER_MIN,
        text[:80],
    )
    return None
