"""What one KAI scheduler shard (node pool) has measured and counted; rendered by series_k8s."""

from __future__ import annotations

from dataclasses import dataclass, field

_BUCKETS: tuple[float, ...] = tuple(5.0 * 2**i for i in range(10))  # KAI ExponentialBuckets(5, 2, 10)


@dataclass(slots=True)
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.buckets)
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
        self.total += value
        self.n += 1


@dataclass(slots=True)
class ShardMetrics:
    """What one KAI scheduler shard (node pool) has counted so far."""

    scheduled: dict[str, int] = field(default_factory=dict)
    acted_on: dict[str, int] = field(default_factory=dict)
    simulated: dict[str, int] = field(default_factory=dict)
    preemption_attempts: int = 0
    evicted_pods: dict[tuple[str, str, str, str, str], float] = field(default_factory=dict)
    e2e_ms: float = 0.0
    open_ms: float = 0.0
    close_ms: float = 0.0
    action_ms: dict[str, float] = field(default_factory=dict)
    task_scheduling: Histogram = field(default_factory=lambda: Histogram(_BUCKETS))
    task_bind: Histogram = field(default_factory=lambda: Histogram(_BUCKETS))
    fair_share: dict[str, float] = field(default_factory=dict)
