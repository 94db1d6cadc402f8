"""The pace of a distributed workload across the emulated nodes of one process.

A throttled GPU computes each step at its clock's share; the other GPUs of its job wait for it at the
all-reduce (``lab.dcgm.gpu_model``). On one node the shim finds those peers itself, by the job or pod
its GPUs share. The replicas of a gang run on several nodes, so the nodes a Run:ai lab serves from one
process post the clock shares of their throttled GPUs here, by pace key (a pod, a workload), and every
node's GPUs take the lowest share posted for a key of theirs. A node's post replaces its last one, so a
cleared throttle stops pacing its peers at that node's next scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping


class PaceBoard:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # each node's scrapes run on its own server thread
        self._posted: dict[str, dict[str, float]] = {}  # node -> pace key -> clock share

    def post(self, node: str, shares: Mapping[str, float]) -> None:
        """``node``'s throttled GPUs now: pace key -> the lowest clock share among them."""
        with self._lock:
            self._posted[node] = dict(shares)

    def share(self, keys: Iterable[str]) -> float:
        """The lowest clock share any node posted for one of ``keys`` (1.0: no straggler)."""
        wanted = set(keys)
        with self._lock:
            return min(
                (share for posted in self._posted.values() for key, share in posted.items() if key in wanted),
                default=1.0,
            )
