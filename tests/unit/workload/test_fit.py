"""The joint model against the figures it is fitted to: the shipped blueprints' Helios clusters.

The fitted aggregates are exact (they are what the fit solves for); the sampled ones carry about four
standard deviations of 200,000 draws (measured over seeds).
"""

from __future__ import annotations

import random
import statistics

import pytest

from lab.blueprint.workload_spec import Trace
from lab.workload.fit import FitError, JointModel, SizeShare
from lab.workload.plan import joint_model

from .workload_testing import shipped_data, shipped_spec

DRAWS = 200_000


@pytest.fixture(scope="module", params=["default", "superpod"])
def fitted(request: pytest.FixtureRequest) -> tuple[Trace, JointModel]:
    spec = shipped_spec(request.param)
    return spec.trace, joint_model(spec)


def test_the_shipped_traces_are_helios_venus_and_saturn() -> None:
    assert shipped_spec("default").trace.cluster == "Helios Venus"
    assert shipped_spec("superpod").trace.cluster == "Helios Saturn"


def test_the_fit_holds_the_trace_size_table_and_run_cdf(fitted: tuple[Trace, JointModel]) -> None:
    trace, model = fitted
    by_size = {row.gpus: row for row in trace.sizes if row.jobs > 0}
    for i, gpus in enumerate(model.sizes):
        assert sum(model.table[i]) == pytest.approx(by_size[gpus].jobs, abs=1e-4)
        gpu_time = sum(p * gpus * m for p, m in zip(model.table[i], model.bin_means, strict=True))
        assert gpu_time / model.gpu_seconds_per_job == pytest.approx(by_size[gpus].gpu_time, abs=1e-4)
    for k, share in enumerate(trace.run_cdf):
        assert model.run_cdf(2.0**k) == pytest.approx(share, abs=1e-6), f"run ≤ 2^{k} s"


def test_the_fit_has_the_trace_aggregates(fitted: tuple[Trace, JointModel]) -> None:
    trace, model = fitted
    gpu_seconds = sum(
        model.table[i][k] * gpus * mean
        for i, gpus in enumerate(model.sizes)
        for k, mean in enumerate(model.bin_means)
    )
    assert gpu_seconds == pytest.approx(trace.gpu_seconds_per_job, rel=1e-6)
    assert model.mean_run_s == pytest.approx(trace.run_s.mean, rel=0.005)
    assert model.median_run_s == pytest.approx(trace.run_s.median, rel=0.05)
    assert model.mean_gpus == pytest.approx(trace.gpus_per_job.mean, rel=0.05)
    counts, gpu_time = model.outcome_shares()
    for name, share in trace.outcomes.by_count.normalised().items():
        assert counts[name] == pytest.approx(share, abs=1e-6)
        assert gpu_time[name] == pytest.approx(trace.outcomes.by_gpu_time.normalised()[name], abs=1e-6)


def test_draws_have_the_trace_aggregates(fitted: tuple[Trace, JointModel]) -> None:
    trace, model = fitted
    rngs = [random.Random(f"fit-test/{aspect}") for aspect in ("cell", "time", "outcome")]
    draws = [model.draw(*rngs) for _ in range(DRAWS)]
    assert statistics.fmean(d.gpus for d in draws) == pytest.approx(model.mean_gpus, rel=0.03)
    assert statistics.median(d.run_s for d in draws) == pytest.approx(model.median_run_s, rel=0.03)
    assert statistics.fmean(d.run_s for d in draws) == pytest.approx(trace.run_s.mean, rel=0.06)
    gpu_seconds = [d.gpus * d.run_s for d in draws]
    assert statistics.fmean(gpu_seconds) == pytest.approx(trace.gpu_seconds_per_job, rel=0.12)
    total = sum(gpu_seconds)
    for name, share in trace.outcomes.by_count.normalised().items():
        mine = [d for d in draws if d.outcome == name]
        assert len(mine) / DRAWS == pytest.approx(share, abs=0.005)
        held = sum(d.gpus * d.run_s for d in mine) / total
        assert held == pytest.approx(trace.outcomes.by_gpu_time.normalised()[name], abs=0.05)


def test_big_jobs_run_long(fitted: tuple[Trace, JointModel]) -> None:
    """Helios Fig. 6: a 32-GPU job runs three to seven times as long as a 1-GPU job, on average."""
    _, model = fitted
    mean_run = dict(zip(model.sizes, model.row_means, strict=True))
    assert mean_run[32] > 2.5 * mean_run[1]


def test_independent_draws_would_miss_saturns_gpu_time() -> None:
    """Why the model is joint: mean GPUs × mean run is half of Saturn's GPU-seconds per job."""
    trace = shipped_spec("superpod").trace
    independent = trace.gpus_per_job.mean * trace.run_s.mean
    assert independent < 0.6 * trace.gpu_seconds_per_job
    model = joint_model(shipped_spec("superpod"))
    assert model.mean_gpus * model.mean_run_s < 0.6 * model.gpu_seconds_per_job


def test_cancelled_jobs_are_the_long_ones_and_failed_the_short(fitted: tuple[Trace, JointModel]) -> None:
    _, model = fitted
    counts, gpu_time = model.outcome_shares()
    assert gpu_time["cancelled"] / counts["cancelled"] > 1.3 > 0.7 > gpu_time["failed"] / counts["failed"]


def test_a_cdf_of_another_cluster_is_refused() -> None:
    """Venus's sizes and GPU time with Saturn's run CDF: the means cannot agree."""
    venus = shipped_spec("default").trace
    saturn = shipped_spec("superpod").trace
    with pytest.raises(FitError, match=r"the run-time CDF and the size table disagree.*same cluster"):
        JointModel(
            [SizeShare(r.gpus, r.jobs, r.gpu_time) for r in venus.sizes],
            venus.gpu_seconds_per_job,
            saturn.run_cdf,
            venus.outcomes.by_count.normalised(),
            venus.outcomes.by_gpu_time.normalised(),
        )


def test_a_summary_row_of_another_cluster_is_refused() -> None:
    data = shipped_data()
    data["workload"]["trace"]["gpus_per_job"]["mean"] = 3.72  # the Helios-wide figure, not Venus's
    with pytest.raises(FitError, match=r"trace.gpus_per_job.mean: the sizes imply 6.8.*publishes 3.7"):
        joint_model(shipped_spec(data=data))


def test_a_size_whose_mean_run_is_out_of_range_is_refused() -> None:
    rows = [SizeShare(1, 0.5, 0.0001), SizeShare(8, 0.5, 0.9999)]
    with pytest.raises(FitError, match="jobs of 1 GPUs would need a mean run"):
        JointModel(rows, 10_000.0, [0.0] * 11 + [1.0], {"completed": 1.0}, {"completed": 1.0})
