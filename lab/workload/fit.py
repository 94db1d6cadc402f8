"""The joint job model: GPUs, run time and outcome drawn together from one trace's published figures.

Pure and stdlib-only. Drawing size and run time apart loses what the traces show most: big jobs run
long (Helios Venus: 98,526 GPU-seconds per GPU job, against 6.7 mean GPUs × 13,041 s mean run =
87,800 only because the two are correlated; Seren's gap is fourfold). A trace that publishes, for one
cluster, the shares of jobs and of GPU time by job size and the run-time CDF fixes the joint shape:

* size row ``i`` (``gpus_i``, job share ``p_i``, GPU-time share ``s_i``) has mean run
  ``m_i = s_i × (GPU-seconds per job) / (p_i × gpus_i)``;
* run bin ``k`` holds the jobs with ``2^(k-1) < run ≤ 2^k`` s, probability ``q_k`` from the CDF;
* the table ``P(i, k) = A_i · D_k · exp(β_i · x_k)`` (``x_k`` the log of the bin's mean) is scaled in
  turns until its size marginal is ``p``, its run marginal ``q`` and each row's mean run ``m_i``
  (iterative proportional fitting, one tilt per size);
* within a bin a run is ``2^(k-1) · 2^(u^θ)`` for uniform ``u``; one ``θ`` is solved so the bins'
  mean equals the sizes' mean (log-uniform, ``θ = 1``, overstates a falling tail by a few percent);
* the outcome of a cell is a softmax in the log of the cell's GPU time, with two parameters per
  outcome solved (Newton) so that both the count shares and the GPU-time shares hold: cancelled jobs
  are the big, long ones, failed jobs the short ones, as in the traces.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

OUTCOMES = ("completed", "cancelled", "failed")


class FitError(ValueError):
    """The published figures admit no joint table of this shape; the message says why and what to fix."""


@dataclass(frozen=True, slots=True)
class SizeShare:
    gpus: int
    jobs: float  # share of GPU jobs
    gpu_time: float  # share of GPU time


@dataclass(frozen=True, slots=True)
class Draw:
    gpus: int
    run_s: float
    outcome: str  # one of OUTCOMES


def _bisect(function: Callable[[float], float], low: float, high: float, what: str) -> float:
    """The root of an increasing ``function`` on [low, high]."""
    if not function(low) <= 0 <= function(high):
        raise FitError(what)
    for _ in range(200):
        middle = (low + high) / 2
        if function(middle) < 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _bin_mean_factor(theta: float) -> float:
    """E[2^(U^θ)], U uniform on [0, 1]: a bin's mean over its lower edge (Simpson, substituting u = w^2
    so the integrand stays smooth for θ < 1)."""
    steps = 256
    total = 0.0
    for step in range(steps + 1):
        w = step / steps
        weight = 1 if step in (0, steps) else (4 if step % 2 else 2)
        total += weight * 2 * w * 2 ** (w ** (2 * theta))
    return total / (3 * steps)


def _softmax_logs(logits: Sequence[float]) -> list[float]:
    top = max(logits)
    exps = [math.exp(value - top) for value in logits]
    total = sum(exps)
    return [value / total for value in exps]


def _solve_linear(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the systems here are 4 × 4)."""
    size = len(vector)
    rows = [[*row, value] for row, value in zip(matrix, vector, strict=True)]
    for column in range(size):
        pivot = max(range(column, size), key=lambda r: abs(rows[r][column]))
        if abs(rows[pivot][column]) < 1e-300:
            raise FitError("the outcome shares admit no fit (a singular system)")
        rows[column], rows[pivot] = rows[pivot], rows[column]
        for row in range(column + 1, size):
            factor = rows[row][column] / rows[column][column]
            for k in range(column, size + 1):
                rows[row][k] -= factor * rows[column][k]
    solution = [0.0] * size
    for row in reversed(range(size)):
        rest = sum(rows[row][k] * solution[k] for k in range(row + 1, size))
        solution[row] = (rows[row][size] - rest) / rows[row][row]
    return solution


class JointModel:
    """The fitted table; :meth:`draw` gives one job's (GPUs, run seconds, outcome)."""

    def __init__(
        self,
        sizes: Sequence[SizeShare],
        gpu_seconds_per_job: float,
        run_cdf: Sequence[float],
        count_shares: Mapping[str, float],
        gpu_time_shares: Mapping[str, float],
    ) -> None:
        rows = [row for row in sizes if row.jobs > 0]
        job_total = sum(row.jobs for row in rows)
        time_total = sum(row.gpu_time for row in rows)
        self.sizes = [row.gpus for row in rows]
        self.size_shares = [row.jobs / job_total for row in rows]
        self.row_means = [
            (row.gpu_time / time_total) * gpu_seconds_per_job / ((row.jobs / job_total) * row.gpus)
            for row in rows
        ]
        self.gpu_seconds_per_job = gpu_seconds_per_job
        previous = 0.0
        bins: list[tuple[int, float]] = []
        for k, value in enumerate(run_cdf):
            if value - previous > 0:
                bins.append((k, value - previous))
            previous = max(previous, value)
        bin_total = sum(q for _, q in bins)
        self.bins = [k for k, _ in bins]
        self.bin_shares = [q / bin_total for _, q in bins]
        self.lower = [2.0 ** (k - 1) for k in self.bins]
        self.theta = self._solve_theta()
        factor = _bin_mean_factor(self.theta)
        self.bin_means = [edge * factor for edge in self.lower]
        self.table = self._fit_table()
        self.outcomes, self.outcome_of_cell = self._fit_outcomes(count_shares, gpu_time_shares)
        self._cells = [(i, k) for i in range(len(self.sizes)) for k in range(len(self.bins))]
        running, self._cumulative = 0.0, []
        for i, k in self._cells:
            running += self.table[i][k]
            self._cumulative.append(running)
        self._outcome_cumulative = []
        for i, k in self._cells:
            shares = self.outcome_of_cell[i][k]
            self._outcome_cumulative.append([sum(shares[: n + 1]) for n in range(len(shares))])

    # -- the fit -------------------------------------------------------------------------------

    @property
    def sizes_mean_run(self) -> float:
        """The mean run the size table implies (Σ p_i m_i)."""
        return sum(p * m for p, m in zip(self.size_shares, self.row_means, strict=True))

    def _solve_theta(self) -> float:
        lower_mean = sum(q * edge for q, edge in zip(self.bin_shares, self.lower, strict=True))
        target = self.sizes_mean_run / lower_mean
        if not 1.0 < target < 2.0:
            raise FitError(
                f"the run-time CDF and the size table disagree: the CDF's bins hold a mean between "
                f"{lower_mean:.0f} and {2 * lower_mean:.0f} s, the sizes' GPU-time shares imply "
                f"{self.sizes_mean_run:.0f} s. Fix: copy the CDF, the size table and gpu_seconds from "
                "the same cluster"
            )
        # The factor falls as θ grows (mass moves to each bin's lower edge).
        return _bisect(lambda t: target - _bin_mean_factor(t), 0.01, 50.0, "no within-bin shape fits")

    def _fit_table(self) -> list[list[float]]:
        centre = sum(q * math.log(m) for q, m in zip(self.bin_shares, self.bin_means, strict=True))
        x = [math.log(m) - centre for m in self.bin_means]
        low, high = min(self.bin_means), max(self.bin_means)
        for gpus, mean in zip(self.sizes, self.row_means, strict=True):
            if not low < mean < high:
                raise FitError(
                    f"jobs of {gpus} GPUs would need a mean run of {mean:.0f} s, outside the run-time "
                    f"CDF's range ({low:.0f}-{high:.0f} s). Fix: check that row's GPU-time share"
                )
        log_d = [math.log(q) for q in self.bin_shares]
        table: list[list[float]] = []
        for _ in range(5000):
            table = [self._row(p, m, log_d, x) for p, m in zip(self.size_shares, self.row_means, strict=True)]
            columns = [sum(row[k] for row in table) for k in range(len(self.bins))]
            error = max(abs(c - q) for c, q in zip(columns, self.bin_shares, strict=True))
            if error < 1e-10:
                return table
            log_d = [d + math.log(q / c) for d, q, c in zip(log_d, self.bin_shares, columns, strict=True)]
        raise FitError(
            f"the joint table did not converge (run-CDF error {error:.2g}). "
            "Fix: copy the size table and the run-time CDF from the same cluster"
        )

    def _row(self, share: float, mean: float, log_d: list[float], x: list[float]) -> list[float]:
        """Row weights D_k·exp(β x_k), β solved so the row's mean run is ``mean``, scaled to ``share``."""

        def weights(beta: float) -> list[float]:
            return _softmax_logs([d + beta * xk for d, xk in zip(log_d, x, strict=True)])

        def excess(beta: float) -> float:
            return sum(w * m for w, m in zip(weights(beta), self.bin_means, strict=True)) / mean - 1

        beta = _bisect(excess, -60.0, 60.0, f"no tilt gives a mean run of {mean:.0f} s")
        return [share * w for w in weights(beta)]

    def _cell_log_gpu_time(self) -> list[list[float]]:
        return [[math.log(g * m) for m in self.bin_means] for g in self.sizes]

    def _fit_outcomes(
        self, count_shares: Mapping[str, float], gpu_time_shares: Mapping[str, float]
    ) -> tuple[list[str], list[list[list[float]]]]:
        names = [name for name in OUTCOMES if count_shares.get(name, 0) > 0]
        count_total = sum(count_shares[n] for n in names)
        time_total = sum(gpu_time_shares[n] for n in names)
        counts = [count_shares[n] / count_total for n in names]
        times = [gpu_time_shares[n] / time_total for n in names]
        logw = self._cell_log_gpu_time()
        weights = self.table
        total_time = sum(
            weights[i][k] * math.exp(logw[i][k])
            for i in range(len(self.sizes))
            for k in range(len(self.bins))
        )
        centre = sum(
            weights[i][k] * logw[i][k] for i in range(len(self.sizes)) for k in range(len(self.bins))
        )

        def shares(params: list[float]) -> list[list[list[float]]]:
            # params: (a_o, γ_o) for every outcome but the first, whose logit is 0.
            result = []
            for i in range(len(self.sizes)):
                row = []
                for k in range(len(self.bins)):
                    z = logw[i][k] - centre
                    logits = [0.0] + [params[2 * n] + params[2 * n + 1] * z for n in range(len(names) - 1)]
                    row.append(_softmax_logs(logits))
                result.append(row)
            return result

        def residuals(params: list[float]) -> list[float]:
            cell = shares(params)
            out = []
            for n in range(1, len(names)):
                count = sum(
                    weights[i][k] * cell[i][k][n]
                    for i in range(len(self.sizes))
                    for k in range(len(self.bins))
                )
                gpu_time = sum(
                    weights[i][k] * cell[i][k][n] * math.exp(logw[i][k])
                    for i in range(len(self.sizes))
                    for k in range(len(self.bins))
                )
                out += [count - counts[n], gpu_time / total_time - times[n]]
            return out

        params = []
        for n in range(1, len(names)):
            params += [math.log(counts[n] / counts[0]), 0.0]
        for _ in range(100):
            current = residuals(params)
            if max((abs(r) for r in current), default=0.0) < 1e-11:
                return names, shares(params)
            jacobian = []
            for j in range(len(params)):
                nudged = params[:]
                nudged[j] += 1e-6
                jacobian.append([(a - b) / 1e-6 for a, b in zip(residuals(nudged), current, strict=True)])
            columns = [list(row) for row in zip(*jacobian, strict=True)]
            step = _solve_linear(columns, [-r for r in current])
            scale = 1.0
            while scale > 1e-4:  # damped: take the largest step that lowers the residual
                trial = [p + scale * s for p, s in zip(params, step, strict=True)]
                if max(abs(r) for r in residuals(trial)) < max(abs(r) for r in current):
                    params = trial
                    break
                scale /= 2
            else:
                break
        raise FitError(
            "no outcome model has these count and GPU-time shares with this size table. "
            "Fix: copy outcomes.by_count and outcomes.by_gpu_time from the same cluster"
        )

    # -- drawing and the fitted aggregates --------------------------------------------------------

    def draw(self, cell_rng: random.Random, time_rng: random.Random, outcome_rng: random.Random) -> Draw:
        index = min(
            bisect.bisect_left(self._cumulative, cell_rng.random() * self._cumulative[-1]),
            len(self._cells) - 1,
        )
        i, k = self._cells[index]
        run_s = self.lower[k] * 2 ** (time_rng.random() ** self.theta)
        cumulative = self._outcome_cumulative[index]
        outcome = bisect.bisect_left(cumulative, outcome_rng.random() * cumulative[-1])
        return Draw(self.sizes[i], run_s, self.outcomes[min(outcome, len(self.outcomes) - 1)])

    def run_cdf(self, seconds: float) -> float:
        """The fitted share of jobs with a run of at most ``seconds``."""
        total = 0.0
        for edge, share in zip(self.lower, self.bin_shares, strict=True):
            if seconds >= 2 * edge:
                total += share
            elif seconds > edge:
                total += share * math.log2(seconds / edge) ** (1 / self.theta)
        return total

    @property
    def median_run_s(self) -> float:
        return math.exp(_bisect(lambda t: self.run_cdf(math.exp(t)) - 0.5, -2.0, 40.0, "no median"))

    @property
    def mean_run_s(self) -> float:
        return sum(q * m for q, m in zip(self.bin_shares, self.bin_means, strict=True))

    @property
    def mean_gpus(self) -> float:
        return sum(g * p for g, p in zip(self.sizes, self.size_shares, strict=True))

    @property
    def longest_run_s(self) -> float:
        return 2 * self.lower[-1]

    def outcome_shares(self) -> tuple[dict[str, float], dict[str, float]]:
        """The fitted (count, GPU-time) shares of each outcome."""
        counts = dict.fromkeys(self.outcomes, 0.0)
        times = dict.fromkeys(self.outcomes, 0.0)
        for i, gpus in enumerate(self.sizes):
            for k, mean in enumerate(self.bin_means):
                for name, share in zip(self.outcomes, self.outcome_of_cell[i][k], strict=True):
                    counts[name] += self.table[i][k] * share
                    times[name] += self.table[i][k] * share * gpus * mean
        total = sum(times.values())
        return counts, {name: value / total for name, value in times.items()}
