"""The fits reproduce the published figures they were given (200,000 draws each)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from lab.workload.fit import FitError, OutcomeDurations, SizeTable, lognormal

SEREN_COUNT = {"completed": 0.497 / 1.001, "cancelled": 0.075 / 1.001, "failed": 0.429 / 1.001}
SEREN_GPU_TIME = {"completed": 0.212, "cancelled": 0.664, "failed": 0.124}
N = 200_000


@pytest.mark.parametrize(
    ("trace", "median", "mean"),
    [("Seren queue", 1, 446), ("Kalos queue", 17, 214), ("Philly run", 874, 18006)],
)
def test_lognormal_has_the_given_median_and_mean(trace: str, median: float, mean: float) -> None:
    fit = lognormal(median, mean)
    assert fit.median == pytest.approx(median)
    assert fit.mean == pytest.approx(mean)
    rng = random.Random(trace)
    draws = [fit.draw(rng) for _ in range(N)]
    assert statistics.median(draws) == pytest.approx(median, rel=0.03)


@pytest.mark.parametrize(("median", "mean", "maximum"), [(1, 5.68, 1024), (1, 3.72, 2048), (1, 26.77, 1024)])
def test_power_of_two_sizes_keep_median_and_mean(median: int, mean: float, maximum: int) -> None:
    """Seren, Helios and Kalos GPUs per job."""
    table = SizeTable(median, mean, maximum)
    assert table.mean == pytest.approx(mean, rel=1e-6)
    assert table.probabilities[0] > 0.5, "more than half the jobs use one GPU: the median is 1"
    assert sum(table.probabilities) == pytest.approx(1)
    rng = random.Random(7)
    draws = [table.draw(rng) for _ in range(N)]
    assert statistics.median(draws) == median
    assert max(draws) <= maximum
    assert {d & (d - 1) for d in draws} == {0}


def test_sizes_refuse_a_mean_no_tail_can_reach() -> None:
    with pytest.raises(FitError, match="out of reach"):
        SizeTable(1, 600, 1024)


def test_outcome_durations_keep_the_overall_median_and_mean() -> None:
    fit = OutcomeDurations(122, 1414, SEREN_COUNT, SEREN_GPU_TIME)
    assert fit.mixture_cdf(122) == pytest.approx(0.5, abs=1e-9)
    mean = sum(SEREN_COUNT[o] * fit.components[o].mean for o in SEREN_COUNT)
    assert mean == pytest.approx(1414, rel=1e-6)


def test_outcome_durations_reproduce_gpu_time_shares() -> None:
    """With sizes independent of outcome, GPU-time shares are run-time shares: Seren's 21/66/12 %."""
    fit = OutcomeDurations(122, 1414, SEREN_COUNT, SEREN_GPU_TIME)
    rng = random.Random(3)
    outcomes = rng.choices(list(SEREN_COUNT), weights=list(SEREN_COUNT.values()), k=N)
    time_by_outcome = dict.fromkeys(SEREN_COUNT, 0.0)
    runs = []
    for outcome in outcomes:
        run = fit.draw(rng, outcome)
        time_by_outcome[outcome] += run
        runs.append(run)
    total = sum(time_by_outcome.values())
    for outcome, share in SEREN_GPU_TIME.items():
        assert time_by_outcome[outcome] / total == pytest.approx(share, abs=0.05), outcome
    assert statistics.median(runs) == pytest.approx(122, rel=0.03)
    assert statistics.fmean(runs) == pytest.approx(1414, rel=0.1)


def test_outcome_multipliers_are_gpu_time_over_count() -> None:
    fit = OutcomeDurations(122, 1414, SEREN_COUNT, SEREN_GPU_TIME)
    assert fit.multipliers["cancelled"] == pytest.approx(0.664 / SEREN_COUNT["cancelled"])
    assert math.isclose(sum(SEREN_COUNT[o] * m for o, m in fit.multipliers.items()), 1.0, rel_tol=1e-9)


@pytest.mark.parametrize(("median", "mean"), [(0, 10), (10, 10), (20, 10)])
def test_lognormal_needs_a_mean_above_the_median(median: float, mean: float) -> None:
    with pytest.raises(FitError):
        lognormal(median, mean)
