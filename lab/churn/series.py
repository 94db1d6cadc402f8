"""Series turnover by family and construct, and active series over time (pure).

A series is *created* at an evaluation when it is present there and was absent at the one before;
it *ended* when it was present before and is absent now. :func:`turnover` is that definition over
snapshots of series identities. `lab churn` has Prometheus compute the same on the server (the
``unless … offset`` queries in :mod:`lab.churn.queries`, so no identity set crosses the wire) and
feeds the counts to a :class:`Tally`; the lab test checks that both agree on real data.

*Construct* is the scrape job (``dcgm``, ``slurm``, ``runai``, ``prometheus`` …); *family* the
metric name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from lab.churn.window import Rate, per_hour

FamilyKey = tuple[str, str]  # (construct, family)
SeriesKey = tuple[tuple[str, str], ...]  # sorted label pairs, __name__ included


def series_key(labels: Mapping[str, str]) -> SeriesKey:
    return tuple(sorted(labels.items()))


def family_of(key: SeriesKey) -> FamilyKey:
    labels = dict(key)
    return labels.get("job", ""), labels.get("__name__", "")


def turnover(snapshots: Sequence[Collection[SeriesKey]]) -> tuple[Counter[FamilyKey], Counter[FamilyKey]]:
    """(created, ended) per family over consecutive snapshots; the first is the state before the window."""
    created: Counter[FamilyKey] = Counter()
    ended: Counter[FamilyKey] = Counter()
    for before, after in pairwise(snapshots):
        earlier, later = set(before), set(after)
        created.update(family_of(key) for key in later - earlier)
        ended.update(family_of(key) for key in earlier - later)
    return created, ended


@dataclass
class Tally:
    """Counts gathered chunk by chunk; ``index`` is the 0-based evaluation of the window."""

    steps: int
    created: Counter[FamilyKey] = field(default_factory=Counter)
    ended: Counter[FamilyKey] = field(default_factory=Counter)
    peak: dict[FamilyKey, int] = field(default_factory=dict)
    active_sum: Counter[FamilyKey] = field(default_factory=Counter)
    by_construct: dict[str, list[int]] = field(default_factory=dict)

    def add_created(self, key: FamilyKey, count: int) -> None:
        self.created[key] += count

    def add_ended(self, key: FamilyKey, count: int) -> None:
        self.ended[key] += count

    def add_active(self, index: int, key: FamilyKey, count: int) -> None:
        if count > self.peak.get(key, -1):
            self.peak[key] = count
        self.active_sum[key] += count
        row = self.by_construct.get(key[0])
        if row is None:
            row = self.by_construct[key[0]] = [0] * self.steps
        row[index] += count


@dataclass(frozen=True)
class ChurnRow:
    construct: str
    family: str  # "" on a construct's total row
    created: int
    ended: int
    created_rate: Rate
    ended_rate: Rate
    peak: int
    mean: float


def family_rows(tally: Tally, duration_s: float, time_scale: float) -> list[ChurnRow]:
    """One row per (construct, family) seen active or turning over, sorted; absent steps count 0."""
    keys = sorted(set(tally.peak) | set(tally.created) | set(tally.ended))
    return [
        ChurnRow(
            construct,
            family,
            tally.created[(construct, family)],
            tally.ended[(construct, family)],
            per_hour(tally.created[(construct, family)], duration_s, time_scale),
            per_hour(tally.ended[(construct, family)], duration_s, time_scale),
            tally.peak.get((construct, family), 0),
            tally.active_sum[(construct, family)] / tally.steps,
        )
        for construct, family in keys
    ]


def construct_rows(tally: Tally, duration_s: float, time_scale: float) -> list[ChurnRow]:
    """One total row per construct; its peak is the peak of the sum, not the sum of family peaks."""
    constructs = sorted({construct for construct, _ in (*tally.peak, *tally.created, *tally.ended)})
    rows = []
    for construct in constructs:
        created = sum(n for (c, _), n in tally.created.items() if c == construct)
        ended = sum(n for (c, _), n in tally.ended.items() if c == construct)
        active = tally.by_construct.get(construct, [0] * tally.steps)
        rows.append(
            ChurnRow(
                construct,
                "",
                created,
                ended,
                per_hour(created, duration_s, time_scale),
                per_hour(ended, duration_s, time_scale),
                max(active, default=0),
                sum(active) / tally.steps,
            )
        )
    return rows
