"""GPU device assignment, an emulated step of the Kubernetes path (there is no kubelet here).

On a real node the kubelet's device manager asks the NVIDIA device plugin for ``nvidia.com/gpu``
devices when it admits a pod bound to the node, and the pod keeps them until it terminates; the
pod-resources API then tells dcgm-exporter which pod holds which GPU. This module does the same from
the API server's pods: a pod bound to a node (``spec.nodeName``) and not yet terminated gets the
lowest-numbered free healthy GPUs of its node (a DGX H100's NVSwitch makes every set equivalent, so
the device plugin's preferred allocation is not modelled), and frees them when it ends or is deleted.
A GPU marked unhealthy (after an XID, as the device plugin's health check does) is never handed out
again. The result is the mapping the DCGM shim's Kubernetes mode reads (``lab.dcgm.kubernetes``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from lab.dcgm.shim import PodInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BoundPod:
    """What device assignment needs of a pod (from the API server's pod object)."""

    uid: str
    namespace: str
    name: str
    node: str
    gpus: int  # its containers' nvidia.com/gpu limit
    container: str
    workload_class: str | None = None  # the DCGM shim's utilisation class
    workload: str | None = None  # its owner (Job, PyTorchJob): the shim paces a workload's GPUs together


@dataclass(slots=True)
class DeviceAssigner:
    node_gpus: Mapping[str, int]  # node -> GPUs its device plugin advertises
    holders: dict[str, dict[int, BoundPod]] = field(default_factory=dict)  # node -> gpu -> pod
    unhealthy: dict[str, set[int]] = field(default_factory=dict)

    def assign(self, live: Iterable[BoundPod]) -> bool:
        """Free the GPUs of pods no longer live, give new pods theirs; True when anything changed."""
        live_by_uid = {p.uid: p for p in live}
        changed = False
        for gpus in self.holders.values():
            for index in [i for i, pod in gpus.items() if pod.uid not in live_by_uid]:
                del gpus[index]
                changed = True
        held = {pod.uid for gpus in self.holders.values() for pod in gpus.values()}
        for pod in sorted(live_by_uid.values(), key=lambda p: (p.node, p.namespace, p.name)):
            if pod.uid in held or pod.gpus <= 0:
                continue
            free = self.free(pod.node)
            if len(free) < pod.gpus:
                # The kubelet would reject the pod (UnexpectedAdmissionError); here it runs without
                # GPUs and DCGM shows none for it. The scheduler saw allocatable the plugin advertised.
                log.warning(
                    "%s/%s: %d GPUs asked on %s, %d free",
                    pod.namespace,
                    pod.name,
                    pod.gpus,
                    pod.node,
                    len(free),
                )
                continue
            node_holders = self.holders.setdefault(pod.node, {})
            for index in free[: pod.gpus]:
                node_holders[index] = pod
            changed = True
        return changed

    def free(self, node: str) -> list[int]:
        taken = self.holders.get(node, {}).keys() | self.unhealthy.get(node, set())
        return [i for i in range(self.node_gpus.get(node, 0)) if i not in taken]

    def gpus_of(self, uid: str) -> list[tuple[str, int]]:
        """(node, gpu index) of every GPU the pod holds, in order."""
        return sorted(
            (node, i) for node, gpus in self.holders.items() for i, p in gpus.items() if p.uid == uid
        )

    def held(self) -> dict[str, list[tuple[str, int]]]:
        """:meth:`gpus_of` of every pod that holds GPUs, in one pass (a look at thousands of pods)."""
        out: dict[str, list[tuple[str, int]]] = {}
        for node, gpus in sorted(self.holders.items()):
            for i, pod in sorted(gpus.items()):
                out.setdefault(pod.uid, []).append((node, i))
        return out

    def mark_unhealthy(self, node: str, gpu: int) -> None:
        self.unhealthy.setdefault(node, set()).add(gpu)

    def mapping(self) -> dict[str, dict[int, PodInfo]]:
        """node -> gpu -> PodInfo, as the DCGM shim's pod-resources file holds it."""
        return {
            node: {
                i: PodInfo(p.name, p.namespace, p.container, p.workload_class, p.workload)
                for i, p in sorted(gpus.items())
            }
            for node, gpus in sorted(self.holders.items())
            if gpus
        }
