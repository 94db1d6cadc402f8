"""Fair share of one resource among sibling queues, as KAI's proportion plugin divides it.

Follows ``pkg/scheduler/plugins/proportion/resource_division/resource_division.go`` (KAI v0.13.0):

1. every queue first gets ``min(deserved, requestable)`` (its quota, or less if it asks for less);
2. what is left is divided in rounds by over-quota weight among queues still asking for more; a
   queue that asks for less than its round's share gets exactly what it asks, the others get the
   share rounded down ("always done in round numbers"), and rounds repeat while something was
   left over by a satisfied queue;
3. the fractions lost to rounding are handed out one unit at a time, largest remainder first.

A queue's requestable share is capped by its limit (``maxAllowed``). KAI's ``kValue`` (usage-based
fairness, needs a usage database) is 0 here: the weights are the plain over-quota weights. Upstream
iterates Go maps; this module iterates queue names in sorted order, so results repeat exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

UNLIMITED = -1.0


@dataclass(frozen=True, slots=True)
class QueueShare:
    name: str
    deserved: float  # quota; -1 = unlimited
    over_quota_weight: float
    limit: float  # maxAllowed; -1 = unlimited
    requested: float  # allocated + pending requests

    @property
    def requestable(self) -> float:
        return self.requested if self.limit == UNLIMITED else min(self.requested, self.limit)


def divide(total: float, queues: Sequence[QueueShare]) -> dict[str, float]:
    """Fair share per queue name for ``total`` units of one resource."""
    ordered = sorted(queues, key=lambda q: q.name)
    fair: dict[str, float] = {}
    remaining = total
    for queue in ordered:
        deserved = total if queue.deserved == UNLIMITED else queue.deserved
        amount = min(deserved, queue.requestable)
        fair[queue.name] = amount
        remaining -= amount
    if remaining <= 0 or not ordered:
        return fair
    if len(ordered) == 1:
        # divideUpToFairShare: a lone queue receives everything that is left.
        fair[ordered[0].name] += remaining
        return fair
    leftovers: dict[str, float] = {}
    while remaining > 0:
        unsatisfied = [q for q in ordered if _wants_more(q, fair[q.name]) and q.over_quota_weight > 0]
        weight_sum = sum(q.over_quota_weight for q in unsatisfied)
        if weight_sum == 0:
            break
        round_amount = remaining
        another_round = False
        for queue in unsatisfied:
            if remaining <= 0:
                break
            wanted = queue.requestable - fair[queue.name]
            share = round_amount * queue.over_quota_weight / weight_sum
            if wanted <= share:
                give = wanted
                leftovers.pop(queue.name, None)
                another_round = True
            else:
                give = math.floor(share)
                if share - give > 0:
                    leftovers[queue.name] = share - give
            if give <= 0:
                continue
            fair[queue.name] += give
            remaining -= give
        if not another_round:
            break
    for name, _fraction in sorted(leftovers.items(), key=lambda item: (-item[1], item[0])):
        if remaining <= 0:
            break
        give = min(1.0, remaining)
        fair[name] += give
        remaining -= give
    return fair


def _wants_more(queue: QueueShare, fair: float) -> bool:
    """Not ``isQueueSatisfied``: still requests more than its fair share and is below its limit."""
    if queue.requested <= fair:
        return False
    return not (queue.limit != UNLIMITED and queue.limit <= fair)
