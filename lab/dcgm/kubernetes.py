"""Kubernetes mode (``-k/--kubernetes``): pod, namespace and container attributes per GPU.

The tag's pod mapper (``internal/pkg/transformation/kubernetes.go@4.5.3-4.8.2``) asks the kubelet's
pod-resources socket which container holds which GPU on every scrape, then sets ``pod``,
``namespace`` and ``container`` on the samples of mapped GPUs only (:417-450); unmapped GPUs keep no
pod attributes. Without a kubelet socket the series pass through and nothing is logged (:297-301).
A failing pod-resources call does not fail the scrape: WARN ``Failed to get pod mappings`` with the
error, and no pod attributes on any series (:332-336).

The lab has no kubelet, so the Run:ai lab's device assignment (``lab/kube/devices.py``, through
``lab/runai/dcgm_bridge.py``) writes the same answer to a JSON file
(``--pod-resources FILE``, lab-only), re-read on every scrape like the socket is queried::

    {"nodes": {"gpu-node-001": {"0": {"pod": "train-7f9c-0", "namespace": "team-a",
                                       "container": "main", "class": "training",
                                       "workload": "train-7f9c"}}}}

Keys are GPU indices (``"2.0"`` for a MIG instance); ``class`` and ``workload`` are optional and
lab-only, never labels: ``class`` drives the GPU model, ``workload`` (the pod's owner) makes the pods of
one distributed workload wait for each other's straggler (:mod:`lab.dcgm.pace`). A missing file
behaves like a missing socket, an unreadable or malformed one like a failed call; writers replace it
atomically (write a temp file, then rename) so that no scrape loses its pod labels mid-write.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lab.dcgm.hpc import job_map_key
from lab.dcgm.samples import CONTAINER_ATTRIBUTE, NAMESPACE_ATTRIBUTE, POD_ATTRIBUTE, Sample


@dataclass(frozen=True, slots=True)
class PodInfo:
    pod: str
    namespace: str
    container: str
    workload_class: str | None = None
    workload: str | None = None  # the pod's owner in its namespace (a Job, a PyTorchJob)

    @property
    def class_key(self) -> str:
        """Key looked up in ``--job-classes`` when the entry names no class."""
        return f"{self.namespace}/{self.pod}"

    @property
    def pace_keys(self) -> tuple[str, ...]:
        """What the pod's GPUs are paced by: the pod's own GPUs, and its workload's on any node."""
        owner = (f"workload:{self.namespace}/{self.workload}",) if self.workload else ()
        return (self.class_key, *owner)


PodMap = dict[str, PodInfo]


class PodResourcesError(ValueError):
    """The pod-resources file exists but cannot be used; the scrape answers HTTP 500."""


def read_pod_resources(path: Path, node: str) -> PodMap | None:
    """GPU key -> pod of ``node``; None when the file does not exist (like a missing socket)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise PodResourcesError(f"{path}: cannot read pod resources: {error.strerror}") from error
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise PodResourcesError(f"{path}: invalid JSON at line {error.lineno}: {error.msg}") from error
    nodes = document.get("nodes") if isinstance(document, dict) else None
    if not isinstance(nodes, dict):
        raise PodResourcesError(f'{path}: expected an object {{"nodes": {{...}}}}')
    devices = nodes.get(node, {})
    if not isinstance(devices, dict):
        raise PodResourcesError(f"{path}: nodes.{node} must map GPU indices to pods")
    pods: PodMap = {}
    for gpu_key, entry in devices.items():
        where = f"{path}: nodes.{node}.{gpu_key}"
        if not isinstance(entry, dict):
            raise PodResourcesError(f"{where} must be an object with pod, namespace, container")
        fields = [entry.get(key) for key in ("pod", "namespace", "container")]
        if not all(isinstance(value, str) for value in fields):
            raise PodResourcesError(f"{where} needs string fields pod, namespace and container")
        workload_class, workload = entry.get("class"), entry.get("workload")
        for key, value in (("class", workload_class), ("workload", workload)):
            if value is not None and not isinstance(value, str):
                raise PodResourcesError(f"{where}.{key} must be a string")
        pod, namespace, container = (str(value) for value in fields)
        pods[str(gpu_key)] = PodInfo(pod, namespace, container, workload_class, workload)
    return pods


def apply_pods(samples: Iterable[Sample], pods: Mapping[str, PodInfo] | None) -> list[Sample]:
    """Set pod/namespace/container on samples of mapped GPUs; input untouched."""
    if pods is None:
        return list(samples)
    out: list[Sample] = []
    for sample in samples:
        info = pods.get(job_map_key(sample))
        if info is None:
            out.append(sample)
            continue
        out.append(
            sample.with_attributes(
                (
                    (POD_ATTRIBUTE, info.pod),
                    (NAMESPACE_ATTRIBUTE, info.namespace),
                    (CONTAINER_ATTRIBUTE, info.container),
                )
            )
        )
    return out


def pod_resources_document(mapping: Mapping[str, Mapping[int, PodInfo]]) -> str:
    """The ``--pod-resources`` JSON that :func:`read_pod_resources` reads and the Run:ai construct
    writes: ``{"nodes": {node: {gpu: {pod, …, class, workload}}}}``."""
    nodes = {
        node: {
            str(gpu): {
                "pod": e.pod,
                "namespace": e.namespace,
                "container": e.container,
                "class": e.workload_class,
                "workload": e.workload,
            }
            for gpu, e in sorted(gpus.items())
        }
        for node, gpus in sorted(mapping.items())
    }
    return json.dumps({"nodes": nodes}, indent=1, sort_keys=True) + "\n"
