"""What the other constructs use of the DCGM shim, and nothing else: the Run:ai construct's in-process
targets, their shared pace and its pod-resources hand-over, the workload's job classes, `lab fault`'s
XID, throttle and PCIe replay files, and the tag the shim emulates. Nothing in ``lab.dcgm`` is imported from
outside the package but through here."""

from __future__ import annotations

from lab.dcgm import UPSTREAM_TAG
from lab.dcgm.counters import Counter, load_counters
from lab.dcgm.gpu_model import EMULATED_FIELDS, XID_ROW_REMAP_EVENT, XID_ROW_REMAP_FAILURE
from lab.dcgm.h100 import FB_TOTAL_MIB
from lab.dcgm.job_classes import JobClassesError, JobClassesReader, JobClassesWriter, load_job_classes
from lab.dcgm.kubernetes import PodInfo, pod_resources_document
from lab.dcgm.node import EmulatedNode, NodeConfig
from lab.dcgm.pace import PaceBoard
from lab.dcgm.pcie import MAX_REPLAYS_PER_MIN, write_pcie_replays
from lab.dcgm.server import ListeningHTTPServer, RunningShim, parse_listen_address, serve
from lab.dcgm.throttle import CAUSES, write_throttle
from lab.dcgm.xid import write_injected_xid


def emulated_counters() -> list[Counter]:
    """The default counters a node serves, restricted to the fields the shim emulates."""
    return load_counters(supported_fields=EMULATED_FIELDS)


__all__ = [
    "CAUSES",
    "FB_TOTAL_MIB",
    "MAX_REPLAYS_PER_MIN",
    "UPSTREAM_TAG",
    "XID_ROW_REMAP_EVENT",
    "XID_ROW_REMAP_FAILURE",
    "EmulatedNode",
    "JobClassesError",
    "JobClassesReader",
    "JobClassesWriter",
    "ListeningHTTPServer",
    "NodeConfig",
    "PaceBoard",
    "PodInfo",
    "RunningShim",
    "emulated_counters",
    "load_job_classes",
    "parse_listen_address",
    "pod_resources_document",
    "serve",
    "write_injected_xid",
    "write_pcie_replays",
    "write_throttle",
]
