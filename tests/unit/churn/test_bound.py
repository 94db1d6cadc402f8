import math

import pytest

from lab.churn.bound import Tolerance, check
from lab.churn.jobs import SlurmJob

LAG = Tolerance(scrape_interval_s=15, grace_s=5)  # lag 20 s, read 1 s


def job(job_id: str, start: int, end: float, gpus: int = 1) -> SlurmJob:
    return SlurmJob(job_id, start, end, "COMPLETED", gpus)


@pytest.mark.parametrize(
    ("when", "seen", "jobs", "over", "unknown"),
    [
        pytest.param(150, {"1"}, [job("1", 100, 200)], False, (), id="a running job's id"),
        pytest.param(150, set(), [job("1", 100, 200)], False, (), id="no label yet: fewer is fine"),
        pytest.param(215, {"1"}, [job("1", 100, 200)], False, (), id="label 15 s after End: scrape lag"),
        pytest.param(220, {"1"}, [job("1", 100, 200)], False, (), id="label within lag + 1 s truncation"),
        pytest.param(222, {"1"}, [job("1", 100, 200)], True, ("1",), id="label after the lag: violation"),
        pytest.param(99.5, {"1"}, [job("1", 100, 200)], False, (), id="read just after the scrape stamp"),
        pytest.param(150, {"1", "2"}, [job("1", 100, 200)], True, ("2",), id="more values than jobs"),
        pytest.param(150, {"9"}, [job("1", 100, 200)], False, ("9",), id="an id Slurm never ran"),
        pytest.param(150, {"1"}, [job("1", 100, math.inf)], False, (), id="still running"),
        pytest.param(150, {"1"}, [job("1", 100, 200, gpus=0)], True, ("1",), id="a job without GPUs"),
    ],
)
def test_bound_with_lag_tolerance(
    when: float, seen: set[str], jobs: list[SlurmJob], over: bool, unknown: tuple[str, ...]
) -> None:
    result = check([when], [seen], jobs, LAG)
    point = result.points[0]
    assert point.over is over
    assert point.unknown == unknown
    assert result.holds is (not over and not unknown)


def test_running_is_strict_and_allowed_includes_the_lag() -> None:
    jobs = [job("1", 100, 200), job("2", 180, 300), job("3", 400, 400)]
    result = check([190, 210, 400, 405], [{"1", "2"}, {"1", "2"}, {"3"}, {"3"}], jobs, LAG)
    assert [(p.running, p.allowed) for p in result.points] == [(2, 2), (1, 2), (1, 1), (0, 1)]
    assert result.holds
    assert result.peak_distinct == 2 and result.peak_running == 2
    assert result.above_running == 2  # t = 210 and t = 405: the lag the tolerance absorbed


def test_a_requeued_job_counts_once_while_its_runs_overlap_in_the_tolerance() -> None:
    runs = [job("7", 100, 110), job("7", 112, 300)]
    result = check([120], [{"7", "8"}], runs, LAG)
    assert result.points[0].allowed == 1
    assert result.points[0].over


def test_a_violation_is_reported_at_its_time() -> None:
    result = check([100, 115, 130], [{"1"}, {"1", "2"}, {"1"}], [job("1", 90, 200)], LAG)
    assert not result.holds
    assert [p.t for p in result.over] == [115]
    assert [p.unknown for p in result.unknown] == [("2",)]


def test_times_and_observations_must_line_up() -> None:
    with pytest.raises(ValueError, match="2 times but 1 observations"):
        check([1, 2], [set()], [], LAG)
