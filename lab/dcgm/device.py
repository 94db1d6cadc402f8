"""Identity of an emulated GPU: index, UUID, PCI bus id, device node, model name.

Deterministic per (node, GPU index), so restarts and rack containers agree and series keep their
identity. UUIDs have the format DCGM reports (``GPU-`` + 8-4-4-4-12 hex, e.g.
``GPU-8b2281de-6d3c-22ed-0ec8-d3b864870b8b`` in the H100 scrape at
github.com/NVIDIA/dcgm-exporter/issues/490) and are derived from a hash of node and index, never
random. PCI bus ids follow an 8-GPU HGX H100 baseboard, so, as on real
DGX/HGX H100 fleets, GPU N has the same bus id on every node.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

# GPU 0 and 1 of an HGX H100 8-GPU board: 00000000:18:00.0 and 00000000:2A:00.0 in two independent
# nvidia-smi captures (NVIDIA/nccl issues #1264 and #1967, "NVIDIA H100 80GB HBM3", 81559MiB, 700W).
# GPUs 2-7 follow the same board's commonly reported layout; not confirmed by a capture here
# (PENDING in signals/dcgm.md), so treat them as the lab's scheme.
HGX_H100_BUS_NUMBERS = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    index: int
    uuid: str
    pci_bus_id: str
    model_name: str

    @property
    def device(self) -> str:
        """The ``device`` label: ``nvidia<N>`` (``fmt.Sprintf("nvidia%d", gpu)`` upstream)."""
        return f"nvidia{self.index}"


def gpu_uuid(node: str, index: int) -> str:
    digest = hashlib.sha256(f"aifactory-lab/{node}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def pci_bus_id(index: int) -> str:
    """``00000000:<bus>:00.0``; indices past one board continue on a second board's numbers."""
    board, slot = divmod(index, len(HGX_H100_BUS_NUMBERS))
    domain = board  # a second baseboard (only for --gpus > 8) gets its own PCI domain
    return f"{domain:08X}:{HGX_H100_BUS_NUMBERS[slot]:02X}:00.0"


def node_gpus(node: str, count: int, model_name: str) -> list[GpuIdentity]:
    return [GpuIdentity(i, gpu_uuid(node, i), pci_bus_id(i), model_name) for i in range(count)]
