"""One emulated GPU node: its GPUs, readers and the scrape pipeline upstream runs per ``/metrics``.

Pipeline per scrape, in the tag's order (``internal/pkg/server/server.go@4.5.3-4.8.2:308-326``,
``transformation/transformer.go@4.5.3-4.8.2:24-37``): GPU values -> pod mapper (``-k``) -> HPC mapper
(``--hpc-job-mapping-dir``) -> renderer. An HPC mapper error becomes a ``ScrapeError`` (HTTP 500); the
pod mapper never fails a scrape (``kubernetes.go@4.5.3-4.8.2:332-336``: it logs and skips), and the
template renderer cannot fail on data.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab import contract
from lab.dcgm import h100
from lab.dcgm.counters import Counter, metric_families
from lab.dcgm.device import node_gpus
from lab.dcgm.gpu_model import GpuModel
from lab.dcgm.hpc import HpcJobMapper, JobMappingError, apply_hpc_jobs
from lab.dcgm.job_classes import JobClassesReader
from lab.dcgm.kubernetes import PodInfo, PodResourcesError, apply_pods, read_pod_resources
from lab.dcgm.logfmt import node_logger
from lab.dcgm.pace import PaceBoard
from lab.dcgm.pcie import read_pcie_replays
from lab.dcgm.rendermetrics import render
from lab.dcgm.samples import Sample
from lab.dcgm.throttle import Cause, read_throttle
from lab.dcgm.workloads import WorkloadProfile, profile_for
from lab.dcgm.xid import read_injected_xid, xid_attributes

XID_FIELD = "DCGM_FI_DEV_XID_ERRORS"


@dataclass(frozen=True, slots=True)
class NodeConfig:
    """Everything one emulated node needs; paths are already expanded for this node."""

    name: str
    address: str = f":{contract.DCGM_EXPORTER_PORT}"
    gpus: int = 8
    model_name: str = h100.MODEL_NAME
    driver_version: str = h100.DRIVER_VERSION
    # Value of the Hostname label (None: the node name); "" drops the label (never from the CLI:
    # the tag parses -n/--no-hostname but no longer reads it).
    hostname: str | None = None
    mapping_dir: Path | None = None
    kubernetes: bool = False
    pod_resources: Path | None = None
    fault_dir: Path | None = None
    throttle_dir: Path | None = None
    pcie_replay_dir: Path | None = None
    seed: int = 0


class ScrapeError(Exception):
    """The scrape fails as the tag's does: HTTP 500 "internal server error", after the log line of
    ``server.go@4.5.3-4.8.2:311-318`` (attributes in its order; ``metrics_count`` counts families)."""

    def __init__(self, error: Exception, transformation: str, families: int) -> None:
        super().__init__(f"{self.message}: {error}")
        self.error = error
        self.attrs = {
            "error": str(error),
            "fieldEntityGroup": "GPU",
            "transformation": transformation,
            "metrics_count": families,
            "metrics_debug_file": "",
            "deviceinfo_debug_file": "",
        }

    message = "Failed to apply transformations on metrics"


def gpu_seed(seed: int, node: str, index: int) -> int:
    """Stable per-GPU seed (independent of PYTHONHASHSEED)."""
    return int.from_bytes(hashlib.sha256(f"{seed}/{node}/{index}".encode()).digest()[:8], "big")


@dataclass(frozen=True, slots=True)
class _GpuRead:
    """What one scrape read for one GPU before computing its values: the profiles of what runs on it,
    its allocation identity and the faults injected on it."""

    profiles: list[WorkloadProfile]
    allocation: tuple[str, ...]
    xid: int | None
    throttle: Cause | None
    replays_per_min: int | None

    def values(self, model: GpuModel, now: float, straggle: float = 1.0) -> dict[str, str]:
        return model.read(
            now,
            self.profiles,
            allocation=self.allocation,
            injected_xid=self.xid,
            throttle=self.throttle,
            straggle=straggle,
            pcie_replays_per_min=self.replays_per_min,
        )


class EmulatedNode:
    def __init__(
        self,
        config: NodeConfig,
        counters: Sequence[Counter],
        *,
        job_classes: Mapping[str, str] | JobClassesReader | None = None,
        clock: Callable[[], float] = time.monotonic,
        log: logging.Logger | None = None,
        pace: PaceBoard | None = None,
    ) -> None:
        self.config = config
        self._pace = pace  # shared with the other nodes of this process (lab.dcgm.pace), if any
        self.log = log or node_logger(config.name)
        self._clock = clock
        self._families = metric_families(counters)
        self._label_fields = [counter.field_name for counter in counters if counter.is_label]
        # Read once per scrape: a file the runner keeps rewriting, or a fixed map.
        self._job_classes: Callable[[], Mapping[str, str]]
        if isinstance(job_classes, JobClassesReader):
            self._job_classes = job_classes.current
        else:
            fixed = dict(job_classes or {})
            self._job_classes = lambda: fixed
        self._hostname = config.name if config.hostname is None else config.hostname
        self.gpus = node_gpus(config.name, config.gpus, config.model_name)
        self.models = [
            GpuModel(
                random.Random(gpu_seed(config.seed, config.name, gpu.index)),
                driver_version=config.driver_version,
            )
            for gpu in self.gpus
        ]
        if config.kubernetes:
            self.log.info("Kubernetes metrics collection enabled!")
        self.hpc = HpcJobMapper(config.mapping_dir, self.log) if config.mapping_dir else None

    @staticmethod
    def _profiles(
        gpu_key: str,
        jobs: Mapping[str, list[str]] | None,
        pods: Mapping[str, PodInfo] | None,
        classes: Mapping[str, str],
    ) -> tuple[list[WorkloadProfile], tuple[str, ...]]:
        """Profiles of what runs on one GPU, and the allocation identity (changes re-draw FB)."""
        job_ids = list(jobs.get(gpu_key, [])) if jobs else []
        profiles = [profile_for(job, classes) for job in job_ids]
        pod = pods.get(gpu_key) if pods else None
        if pod is not None:
            profiles.append(profile_for(pod.class_key, classes, pod.workload_class))
            job_ids.extend(pod.pace_keys)
        return profiles, tuple(job_ids)

    def _gpu_read(
        self,
        index: int,
        jobs: Mapping[str, list[str]] | None,
        pods: Mapping[str, PodInfo] | None,
        classes: Mapping[str, str],
    ) -> _GpuRead:
        profiles, allocation = self._profiles(str(index), jobs, pods, classes)
        config, name, log = self.config, self.config.name, self.log
        return _GpuRead(
            profiles,
            allocation,
            read_injected_xid(config.fault_dir, name, index, log) if config.fault_dir else None,
            read_throttle(config.throttle_dir, name, index, log) if config.throttle_dir else None,
            read_pcie_replays(config.pcie_replay_dir, name, index, log) if config.pcie_replay_dir else None,
        )

    def samples(self) -> tuple[list[Sample], dict[str, list[str]] | None, dict[str, PodInfo] | None]:
        """Untransformed samples of all GPUs plus the job and pod maps read for this scrape."""
        now = self._clock()
        pods: dict[str, PodInfo] | None = None
        if self.config.kubernetes and self.config.pod_resources:
            # No socket: silently no pod labels. A failed call: logged, and the scrape goes on.
            try:
                pods = read_pod_resources(self.config.pod_resources, self.config.name)
            except PodResourcesError as error:
                self.log.warning("Failed to get pod mappings", extra={"attrs": {"error": str(error)}})
        try:
            jobs = self.hpc.read() if self.hpc else None
        except JobMappingError as error:
            raise ScrapeError(error, HpcJobMapper.name, len(self._families)) from error
        classes = self._job_classes()
        reads = [self._gpu_read(gpu.index, jobs, pods, classes) for gpu in self.gpus]
        # Throttled GPUs first: the slowest GPU of a job paces its other GPUs (same hpc_job or pod, or
        # on another node of this process the same workload).
        by_gpu: dict[int, dict[str, str]] = {}
        pace: dict[str, float] = {}
        for index, gpu_read in enumerate(reads):
            if gpu_read.throttle is not None:
                model = self.models[index]
                by_gpu[index] = gpu_read.values(model, now)
                for key in gpu_read.allocation:
                    pace[key] = min(pace.get(key, 1.0), model.clock_share)
        if self._pace is not None:
            self._pace.post(self.config.name, pace)  # the board then answers for this node's keys too
        for index, gpu_read in enumerate(reads):
            if index not in by_gpu:
                if self._pace is not None:
                    straggle = self._pace.share(gpu_read.allocation)
                else:
                    straggle = min((pace.get(key, 1.0) for key in gpu_read.allocation), default=1.0)
                by_gpu[index] = gpu_read.values(self.models[index], now, straggle)
        out: list[Sample] = []
        for gpu in self.gpus:
            values = by_gpu[gpu.index]
            labels = tuple((field, values[field]) for field in self._label_fields)
            for family in self._families:
                name = family.field_name
                attributes = xid_attributes(int(values[name])) if name == XID_FIELD else ()
                out.append(
                    Sample(
                        family,
                        values[name],
                        str(gpu.index),
                        gpu.uuid,
                        gpu.pci_bus_id,
                        gpu.device,
                        gpu.model_name,
                        self._hostname,
                        labels,
                        attributes,
                    )
                )
        return out, jobs, pods

    def scrape(self) -> str:
        """The ``/metrics`` body; raises ScrapeError where the tag answers HTTP 500."""
        samples, jobs, pods = self.samples()
        if self.config.kubernetes:
            samples = apply_pods(samples, pods)
        if self.hpc is not None:
            samples = apply_hpc_jobs(samples, jobs)
        return render(samples)
