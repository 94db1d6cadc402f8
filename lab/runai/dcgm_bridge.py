"""The DCGM side of a Run:ai lab: lab.dcgm emulated nodes in Kubernetes mode, fed by the driver.

The shim's Kubernetes mode reads GPU -> pod assignments from a pod-resources JSON file on every scrape
(``lab/dcgm/kubernetes.py``), XID faults from ``<fault dir>/<node>/<gpu>`` (``lab/dcgm/xid.py``) and
throttles from ``<out>/throttle/<node>/<gpu>``, which `lab fault throttle` writes from the host
(``lab/dcgm/throttle.py``).
This bridge writes both atomically (temp file + rename, never a half-written file) and holds one
``EmulatedNode`` per node in-process, on the driver's clock, so the DCGM series follow allocations
exactly. Without an in-process hook in lab.dcgm, the file is the hand-over (described in docs/runai.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lab.contract import THROTTLE_DIR
from lab.dcgm.shim import (
    FB_TOTAL_MIB,
    EmulatedNode,
    NodeConfig,
    PaceBoard,
    PodInfo,
    emulated_counters,
    pod_resources_document,
    write_injected_xid,
)
from lab.paths import atomic_write

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"


@dataclass(frozen=True, slots=True)
class GpuStat:
    util_pct: float
    fb_used_mib: float
    fb_total_mib: float
    uuid: str


class DcgmBridge:
    def __init__(
        self,
        nodes: Iterable[tuple[str, int, str]],
        out_dir: Path,
        *,
        seed: int,
        clock: Callable[[], float],
        address_for: Callable[[str], str] | None = None,
    ) -> None:
        self.pod_resources = out_dir / "pod-resources.json"
        self.fault_dir = out_dir / "faults"
        self.fault_dir.mkdir(parents=True, exist_ok=True)
        counters = emulated_counters()
        pace = PaceBoard()  # a gang's replicas on several nodes wait for one straggler
        self.nodes: dict[str, EmulatedNode] = {}
        for name, gpus, model in nodes:
            config = NodeConfig(
                name=name,
                address=address_for(name) if address_for else "127.0.0.1:0",
                gpus=gpus,
                model_name=model,
                kubernetes=True,
                pod_resources=self.pod_resources,
                fault_dir=self.fault_dir,
                throttle_dir=out_dir / THROTTLE_DIR,
                seed=seed,
            )
            self.nodes[name] = EmulatedNode(
                config, counters, clock=clock, log=logging.getLogger(f"lab.runai.dcgm.{name}"), pace=pace
            )
        self._last_document = ""
        self.write({})

    def write(self, mapping: Mapping[str, Mapping[int, PodInfo]]) -> bool:
        """Replace the pod-resources file when the assignment changed; True when written."""
        document = pod_resources_document(mapping)
        if document == self._last_document:
            return False
        atomic_write(self.pod_resources, document)
        self._last_document = document
        return True

    def inject_xid(self, node: str, gpu: int, code: int) -> Path:
        return write_injected_xid(self.fault_dir, node, gpu, code)

    def gpu_stats(self) -> dict[tuple[str, int], GpuStat]:
        """Utilisation and framebuffer of every GPU, drawn from the same models the targets serve."""
        out: dict[tuple[str, int], GpuStat] = {}
        for name, node in self.nodes.items():
            samples, _, _ = node.samples()
            values: dict[tuple[int, str], float] = {}
            uuids: dict[int, str] = {}
            for sample in samples:
                field = sample.counter.field_name
                if field in (GPU_UTIL, FB_USED, FB_FREE, FB_RESERVED):
                    values[(int(sample.gpu), field)] = float(sample.value)
                    uuids[int(sample.gpu)] = sample.gpu_uuid
            for gpu, uuid in uuids.items():
                total = (
                    values.get((gpu, FB_USED), 0.0)
                    + values.get((gpu, FB_FREE), 0.0)
                    + values.get((gpu, FB_RESERVED), 0.0)
                )
                out[(name, gpu)] = GpuStat(
                    values.get((gpu, GPU_UTIL), 0.0),
                    values.get((gpu, FB_USED), 0.0),
                    total or float(FB_TOTAL_MIB),
                    uuid,
                )
        return out
