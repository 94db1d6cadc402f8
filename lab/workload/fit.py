"""Distributions fitted to published trace summaries (medians, means, shares). Pure and stdlib-only.

Traces publish a median and a mean, not a shape; a log-normal is the usual two-parameter fit for
heavy-tailed job sizes, run times and queue waits. Three fits live here:

* :func:`lognormal` — median and mean fix ``mu = ln(median)``, ``sigma = sqrt(2 ln(mean/median))``.
* :class:`SizeTable` — GPUs per job: a log-normal rounded to powers of two (1, 2, 4 … max), whose
  sigma is solved so the *rounded* distribution has the trace's mean; rounding keeps the median.
* :class:`OutcomeDurations` — run times per outcome. The traces' GPU-time shares differ from their
  count shares (Seren: cancelled jobs are 7.5 % of jobs but 66.4 % of GPU time), so each outcome's
  median is scaled by ``gpu_time_share / count_share``; one common sigma and a base median are solved
  so the mixture still has the trace's overall median *and* mean.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_LN2 = math.log(2)


class FitError(ValueError):
    """The published figures admit no distribution of the assumed shape; the message says why."""


def normal_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@dataclass(frozen=True, slots=True)
class LogNormal:
    mu: float
    sigma: float

    @property
    def median(self) -> float:
        return math.exp(self.mu)

    @property
    def mean(self) -> float:
        return math.exp(self.mu + self.sigma**2 / 2)

    def draw(self, rng: random.Random) -> float:
        return rng.lognormvariate(self.mu, self.sigma)


def lognormal(median: float, mean: float) -> LogNormal:
    if not 0 < median < mean:
        raise FitError(f"a log-normal needs 0 < median < mean, got median {median}, mean {mean}")
    return LogNormal(math.log(median), math.sqrt(2 * math.log(mean / median)))


def _solve_increasing(function: Callable[[float], float], low: float, high: float, what: str) -> float:
    """Root of ``function`` on [low, high]: scan for the first sign change, then bisect."""
    steps = 400
    previous_x, previous_y = low, function(low)
    for step in range(1, steps + 1):
        x = low + (high - low) * step / steps
        y = function(x)
        if previous_y <= 0 <= y:
            a, b = previous_x, x
            for _ in range(100):
                middle = (a + b) / 2
                if function(middle) < 0:
                    a = middle
                else:
                    b = middle
            return (a + b) / 2
        previous_x, previous_y = x, y
    raise FitError(what)


class SizeTable:
    """GPUs per job: P(2^k) for k = 0 … log2(max), from a log-normal rounded in log2 space."""

    def __init__(self, median: int, mean: float, maximum: int) -> None:
        self.median = median
        self.top = math.floor(math.log2(maximum))
        self._centre = math.log2(median)
        if mean <= median:
            self.sigma = 0.0
        else:
            limit = (median + (1 << self.top)) / 2  # what any sigma approaches: half the mass at each end
            if not mean < limit:
                raise FitError(
                    f"sizes.mean_gpus {mean:g} is out of reach for median {median} and max {maximum} "
                    f"(the fit tops out below {limit:.1f}). Fix: check max_gpus against the trace"
                )
            self.sigma = _solve_increasing(
                lambda s: self._mean_for(s) - mean,
                1e-6,
                20.0,
                f"no power-of-two log-normal has median {median} and mean {mean}",
            )
        self.probabilities = self._probabilities(self.sigma)
        self._cumulative = [sum(self.probabilities[: k + 1]) for k in range(len(self.probabilities))]

    def _probabilities(self, sigma: float) -> list[float]:
        if sigma == 0:
            return [1.0 if 1 << k == self.median else 0.0 for k in range(self.top + 1)]

        def below(edge: float) -> float:  # P(log2 X < edge)
            return normal_cdf((edge - self._centre) * _LN2 / sigma)

        probabilities = []
        for k in range(self.top + 1):
            lower = 0.0 if k == 0 else below(k - 0.5)
            upper = 1.0 if k == self.top else below(k + 0.5)
            probabilities.append(upper - lower)
        return probabilities

    def _mean_for(self, sigma: float) -> float:
        return sum((1 << k) * p for k, p in enumerate(self._probabilities(sigma)))

    @property
    def mean(self) -> float:
        return self._mean_for(self.sigma) if self.sigma else float(self.median)

    def draw(self, rng: random.Random) -> int:
        index = bisect.bisect_left(self._cumulative, rng.random() * self._cumulative[-1])
        return 1 << min(index, self.top)


class OutcomeDurations:
    """Run times per outcome: log-normals with one sigma and medians ``base × multiplier[outcome]``."""

    def __init__(
        self,
        median: float,
        mean: float,
        count_shares: Mapping[str, float],
        gpu_time_shares: Mapping[str, float],
    ) -> None:
        if not 0 < median < mean:
            raise FitError(f"durations need 0 < median < mean, got median {median}, mean {mean}")
        weights = {name: share for name, share in count_shares.items() if share > 0}
        # Scaling each outcome's mean by gpu_time/count reproduces the GPU-time shares when sizes do
        # not depend on outcome; sum(count × multiplier) = sum(gpu_time) = 1 keeps the overall mean.
        self.multipliers = {name: gpu_time_shares[name] / share for name, share in weights.items()}
        self.weights = weights

        def excess_below_median(sigma: float) -> float:
            base = mean * math.exp(-(sigma**2) / 2)
            below = sum(
                weight * normal_cdf((math.log(median / base) - math.log(self.multipliers[name])) / sigma)
                for name, weight in weights.items()
            )
            return below - 0.5

        self.sigma = _solve_increasing(
            excess_below_median,
            1e-3,
            12.0,
            f"no log-normal mixture has median {median} s and mean {mean} s with these outcome shares. "
            "Fix: copy durations and outcome shares from the same trace",
        )
        self.base = mean * math.exp(-(self.sigma**2) / 2)
        self.components = {
            name: LogNormal(math.log(self.base * multiplier), self.sigma)
            for name, multiplier in self.multipliers.items()
        }

    def draw(self, rng: random.Random, outcome: str) -> float:
        return self.components[outcome].draw(rng)

    def mixture_cdf(self, seconds: float) -> float:
        return sum(
            weight * normal_cdf((math.log(seconds) - self.components[name].mu) / self.sigma)
            for name, weight in self.weights.items()
        )
