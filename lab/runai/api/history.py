"""The metric history behind ``start``, ``end`` and ``numberOfSamples``: one snapshot of every scope's
values per Prometheus scrape of the driver's ``/metrics`` (a request carrying Prometheus'
``X-Prometheus-Scrape-Timeout-Seconds`` header), so the API's samples are the values the lab's
Prometheus stored at the same instants (Run:ai's control plane likewise reads its metrics from
Prometheus).

Sampling follows Prometheus' instant lookup: a sample at ``t`` is the latest snapshot at or before
``t`` and no older than the lookback window; a time with no such snapshot has no sample.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from collections.abc import Mapping

LOOKBACK_S = 300.0  # Prometheus' default --query.lookback-delta (5m)
RETENTION_S = 6 * 3600.0  # lab assumption: six hours of scrapes, 1,440 at the 15 s interval

Values = Mapping[str, Mapping[str, float]]  # scope → metric type → value


def sample_times(start: float, end: float, count: int) -> list[float]:
    """``count`` instants spread evenly from ``start`` to ``end``, both included (one: ``end``)."""
    if count <= 0:
        return []
    if count == 1 or end == start:
        return [end] * min(count, 1)
    step = (end - start) / (count - 1)
    return [start + i * step for i in range(count)]


class History:
    def __init__(self, retention_s: float = RETENTION_S) -> None:
        self.retention_s = retention_s
        self._times: deque[float] = deque()
        self._values: deque[Values] = deque()
        self._lock = threading.Lock()

    def record(self, at: float, values: Values) -> None:
        with self._lock:
            if self._times and at < self._times[-1]:
                return  # a late scrape never rewrites the past
            self._times.append(at)
            self._values.append(values)
            while self._times and self._times[0] < at - self.retention_s:
                self._times.popleft()
                self._values.popleft()

    def samples(self, scope: str, metric: str, times: list[float]) -> list[tuple[float, float]]:
        """(time, value) at each of ``times`` where a snapshot within the lookback holds the value."""
        with self._lock:
            stamps, values = list(self._times), list(self._values)
        found = []
        for t in times:
            index = bisect.bisect_right(stamps, t) - 1
            if index < 0 or t - stamps[index] > LOOKBACK_S:
                continue
            value = values[index].get(scope, {}).get(metric)
            if value is not None:
                found.append((t, value))
        return found
