"""Workload classes: how busy a GPU is while a job of a given kind runs on it.

Basis (shared/reference/workloads.md): Seren (InternLM/AcmeTrace, NSDI'24) DCGM GPU_UTIL has median
~99 % with p25 = 0 and SM-active median ~50 %; Microsoft Philly (ATC'19) has median utilisation
~48 % with a quarter of samples at 0. The lab reads this as: allocated training GPUs sit near
100 % GPU_UTIL with ~50 % SM activity, serving sits in the middle, interactive sessions are mostly
idle, and idle (unallocated) GPUs supply the zeros. Every profile is (mean, sd) of a clipped normal
draw per scrape, plus the share of scrapes that see a stall (data loading, checkpoint, think time).

Jobs not in the job-classes file (:mod:`lab.dcgm.job_classes`) are ``training`` (DEFAULT_CLASS), the
Seren-like batch majority.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

Spread = tuple[float, float]  # (mean, standard deviation)


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    name: str
    # Ordering when several jobs share a GPU: the busiest class sets the pace.
    rank: int
    stall_fraction: float  # share of scrapes at GPU_UTIL 0
    gpu_util_pct: Spread
    sm_active: Spread  # drives GR engine activity relative to GPU_UTIL
    tensor_active: Spread
    dram_active: Spread
    mem_copy_util_pct: Spread
    fb_used_mib: Spread
    nvlink_mbps: Spread
    pcie_bytes_per_s: Spread


PROFILES: dict[str, WorkloadProfile] = {
    # Seren GPU_UTIL median ~99 %, SM-active median ~50 %; LLM training fills most of 80 GB and
    # runs NCCL all-reduce over NVLink (a fraction of the 900 GB/s) and GPUDirect RDMA over PCIe.
    "training": WorkloadProfile(
        "training",
        3,
        0.05,
        (97.0, 3.0),
        (0.55, 0.12),
        (0.35, 0.10),
        (0.40, 0.10),
        (40.0, 10.0),
        (68000.0, 6000.0),
        (180000.0, 60000.0),
        (4e9, 1.5e9),
    ),
    # Serving: utilisation around the Philly median (~48 %), memory-bound decode (DRAM activity
    # above tensor activity), KV cache pre-allocated (vLLM's default gpu_memory_utilization 0.9).
    "inference": WorkloadProfile(
        "inference",
        2,
        0.15,
        (50.0, 20.0),
        (0.30, 0.10),
        (0.15, 0.06),
        (0.45, 0.12),
        (30.0, 10.0),
        (73000.0, 1500.0),
        (20000.0, 10000.0),
        (5e8, 2e8),
    ),
    # Notebooks and debugging sessions: mostly idle (the zeros of Philly's and Seren's lower
    # quartile), small models, little traffic.
    "interactive": WorkloadProfile(
        "interactive",
        1,
        0.70,
        (8.0, 10.0),
        (0.05, 0.05),
        (0.02, 0.02),
        (0.04, 0.04),
        (2.0, 2.0),
        (9000.0, 6000.0),
        (0.0, 0.0),
        (2e7, 1e7),
    ),
}
DEFAULT_CLASS = "training"


def profile_for(key: str, classes: Mapping[str, str], explicit: str | None = None) -> WorkloadProfile:
    """Profile of one job (or pod); an explicit class (pod-resources ``class``) wins."""
    name = explicit or classes.get(key, DEFAULT_CLASS)
    return PROFILES.get(name, PROFILES[DEFAULT_CLASS])
