from lab.churn.cardinality import job_series, multiplier, unseen_jobs
from lab.churn.jobs import SlurmJob

F = 25


def test_multiplier_is_one_without_sharing_and_k_with_k_jobs_on_a_gpu() -> None:
    # Step 1: one job on 2 GPUs (50 series). Step 2: three jobs share one GPU (75 series on 1 GPU).
    result = multiplier([0, 2 * F, 3 * F], [0, 2, 1], [0, F, 3 * F], F)
    assert result.labelled_steps == 2
    assert result.peak == 3.0
    assert result.mean == 2.0
    assert result.peak_jobs_on_one_gpu == 3.0


def test_multiplier_without_labels_is_unknown() -> None:
    assert multiplier([0, 0], [0, 0], [0, 0], F).mean is None
    assert multiplier([5], [1], [5], 0).peak is None


def test_series_per_job_against_f_times_gpus() -> None:
    jobs = [SlurmJob("10", 0, 100, "COMPLETED", 2), SlurmJob("9", 0, 100, "COMPLETED", 1)]
    per_step = [{"10": F}, {"10": 2 * F, "9": F}, {"x": 3}]
    seen = {j.job_id: j for j in job_series(per_step, jobs)}
    assert list(seen) == ["9", "10", "x"]  # numeric order, then the rest
    assert seen["10"].series == 2 * F and seen["10"].expected(F) == 2 * F and seen["10"].seen_steps == 2
    assert seen["x"].gpus is None and seen["x"].expected(F) is None


def test_unseen_jobs_are_gpu_jobs_inside_the_scraped_span_without_labels() -> None:
    jobs = [
        SlurmJob("1", 110, 111, "COMPLETED", 1),  # inside, unseen
        SlurmJob("2", 110, 150, "COMPLETED", 1),  # inside, seen
        SlurmJob("3", 50, 120, "COMPLETED", 1),  # began before the span
        SlurmJob("4", 110, 111, "COMPLETED", 0),  # no GPU
    ]
    assert [j.job_id for j in unseen_jobs(["2"], jobs, 100, 200)] == ["1"]
