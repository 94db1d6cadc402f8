"""Counting what crossed: the site's raw samples against the centre's, by series and timestamp, the
labels only the centre has (the site's external label, the gateway's read) set aside."""

from __future__ import annotations

from typing import Any

import pytest

from lab import promql
from lab.egress import crossing

SITE = [{"metric": {"__name__": "r", "gpu": "0"}, "values": [[100.0, "1"], [115.0, "1"], [130.0, "1"]]}]
CENTRE = [
    {
        "metric": {"__name__": "r", "gpu": "0", "cluster": "lab", "job": "egress", "instance": "p:9090"},
        "values": [[100.0, "1"], [130.0, "1"]],
    }
]


def test_a_sample_the_centre_lacks_is_named_with_its_series_and_time(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"http://site": SITE, "http://centre": CENTRE}
    asked: list[tuple[str, str, float]] = []

    def raw_range(url: str, selector: str, at: float) -> list[dict[str, Any]]:
        asked.append((url, selector, at))
        return answers[url]

    monkeypatch.setattr(promql, "raw_range", raw_range)
    found = crossing.count("http://site", "http://centre", "r", 90, 140)
    assert (found.at_site, found.crossed) == (3, 2)
    assert found.missing == [("__name__=r,gpu=0", 115.0)]
    assert asked == [("http://site", "r[50s]", 140), ("http://centre", "r[50s]", 140)]
