"""The scrape history: samples as Prometheus' instant lookup finds them."""

from __future__ import annotations

from lab.runai.api.history import LOOKBACK_S, History, sample_times


def test_sample_times_spread_from_start_to_end() -> None:
    assert sample_times(0.0, 60.0, 4) == [0.0, 20.0, 40.0, 60.0]
    assert sample_times(0.0, 60.0, 1) == [60.0]
    assert sample_times(0.0, 60.0, 0) == []


def test_a_sample_is_the_latest_scrape_at_or_before_its_time_within_the_lookback() -> None:
    history = History()
    history.record(100.0, {"cluster": {"ALLOCATED_GPU": 3.0}})
    history.record(115.0, {"cluster": {"ALLOCATED_GPU": 5.0}})
    times = [99.0, 100.0, 114.9, 115.0, 115.0 + LOOKBACK_S + 1]
    assert history.samples("cluster", "ALLOCATED_GPU", times) == [(100.0, 3.0), (114.9, 3.0), (115.0, 5.0)]
    assert history.samples("cluster", "TOTAL_GPU", times) == []


def test_old_scrapes_leave_after_the_retention_and_late_ones_are_ignored() -> None:
    history = History(retention_s=30.0)
    for at in (0.0, 15.0, 30.0, 45.0):
        history.record(at, {"cluster": {"TOTAL_GPU": at}})
    history.record(40.0, {"cluster": {"TOTAL_GPU": -1.0}})
    assert history.samples("cluster", "TOTAL_GPU", [0.0, 15.0, 44.0]) == [(15.0, 15.0), (44.0, 30.0)]
