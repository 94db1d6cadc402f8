from itertools import pairwise

import pytest

from lab.churn.window import Window, bounds, parse_duration, parse_time, per_hour, step_seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15s", 15), ("90", 90), ("5m", 300), ("1h30m", 5400), ("2d", 172800), ("1w", 604800), ("500ms", 0.5)],
)
def test_durations_read_like_prometheus(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "1h 30m", "-5m", "0s", "h"])
def test_bad_durations_are_refused_with_examples(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_times_are_utc_unless_they_say_otherwise() -> None:
    assert parse_time("2026-11-30T10:00:00Z") == parse_time("2026-11-30T10:00:00") == 1796032800
    assert parse_time("2026-11-30T11:00:00+01:00") == 1796032800
    assert parse_time("1796032800") == 1796032800
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday")


def test_window_evaluates_whole_steps_after_its_start() -> None:
    window = Window.between(1000, 1061, 15)
    assert window.steps == 4
    assert window.times() == [1015, 1030, 1045, 1060]
    assert window.end == 1060 and window.duration_s == 60
    assert [window.index(t) for t in (1015.0, 1060.0)] == [0, 3]


def test_window_shorter_than_a_step_is_refused() -> None:
    with pytest.raises(ValueError, match="shorter than one step"):
        Window.between(1000, 1010, 15)


def test_chunks_cover_the_window_once_each_starting_where_the_last_ended() -> None:
    window = Window.between(0, 15 * 10, 15)
    chunks = window.chunks(4)
    assert [c.steps for c in chunks] == [4, 4, 2]
    assert [t for c in chunks for t in c.times()] == window.times()
    assert all(a.end == b.start for a, b in pairwise(chunks))


def test_rates_per_lab_hour_and_real_time_equivalent() -> None:
    # 120 series created in 30 lab minutes of a workload played 60 times faster than real time:
    # 240 per lab hour, and one lab hour holds 60 real hours of jobs, so 4 per real hour.
    rate = per_hour(120, 1800, time_scale=60)
    assert rate.lab_per_hour == 240
    assert rate.real_per_hour == 4
    assert per_hour(10, 3600).real_per_hour == 10
    with pytest.raises(ValueError):
        per_hour(1, 0)


def test_window_bounds_from_since_or_start_and_end() -> None:
    now = 1796036400.0
    assert bounds(None, None, None, now) == (now - 3600, now)
    assert bounds("15m", None, None, now) == (now - 900, now)
    assert bounds(None, "1796032800", None, now) == (1796032800, now)
    assert bounds(None, "2026-11-30T10:00:00Z", "2026-11-30T10:30:00Z", now) == (1796032800, 1796034600)
    with pytest.raises(ValueError, match="either --since or --start"):
        bounds("1h", "1796032800", None, now)


def test_step_defaults_to_the_shortest_scrape_interval_in_whole_seconds() -> None:
    assert step_seconds(None, {"dcgm": 15.0, "slurm": 30.0}) == 15
    assert step_seconds(None, {}) == 15
    assert step_seconds("1m", {"dcgm": 15.0}) == 60
    with pytest.raises(ValueError, match="whole seconds"):
        step_seconds("2.5s", {})
