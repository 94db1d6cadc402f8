"""Counting what crossed (pure but for the two queries): every raw sample of an egress record that the
site's Prometheus stored in a window, against the raw samples the centre holds of the same series.
The gateway keeps each sample's own timestamp, so a sample that crossed is the same (series, time) on
both sides; the loss tests count them, they do not estimate."""

from __future__ import annotations

from dataclasses import dataclass

from lab import promql

# The labels a series has at the centre and not in the site's storage: the site's external label
# (Prometheus adds it on /federate) and the gateway's read (signals/egress.md).
ADDED_AT_CENTRE = ("cluster", "job", "instance")


@dataclass(frozen=True)
class Crossing:
    at_site: int  # raw samples of the record at the site in the window
    missing: list[tuple[str, float]]  # (series, Unix time) at the site and not at the centre

    @property
    def crossed(self) -> int:
        return self.at_site - len(self.missing)


def _key(labels: dict[str, str]) -> str:
    kept = {k: v for k, v in labels.items() if k not in ADDED_AT_CENTRE}
    return ",".join(f"{k}={v}" for k, v in sorted(kept.items()))


def _samples(url: str, record: str, start: float, end: float) -> set[tuple[str, float]]:
    window = max(1, int(end - start))
    return {
        (_key(series["metric"]), round(float(t), 3))
        for series in promql.raw_range(url, f"{record}[{window}s]", end)
        for t, _ in series["values"]
    }


def count(site: str, centre: str, record: str, start: float, end: float) -> Crossing:
    """The samples of ``record`` the site stored between ``start`` and ``end``, and those of them the
    centre does not hold (``centre``: a Prometheus-compatible query API, VictoriaMetrics here)."""
    at_site = _samples(site, record, start, end)
    missing = sorted(at_site - _samples(centre, record, start, end), key=lambda sample: sample[1])
    return Crossing(len(at_site), missing)
