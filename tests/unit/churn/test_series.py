from lab.churn.series import Tally, construct_rows, family_rows, series_key, turnover

UTIL, TEMP = "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP"


def gpu_series(family: str, gpu: str, job: str | None = None) -> tuple[tuple[str, str], ...]:
    labels = {"__name__": family, "job": "dcgm", "instance": "dgx-001:9400", "gpu": gpu}
    if job is not None:
        labels["hpc_job"] = job
    return series_key(labels)


def gpu(gpu_index: str, job: str | None = None, families: tuple[str, ...] = (UTIL, TEMP)) -> set[object]:
    return {gpu_series(f, gpu_index, job) for f in families}


def test_a_job_on_one_gpu_turns_over_two_f_series_at_start_and_at_end() -> None:
    at_rest = gpu("0") | gpu("1")
    job_runs = gpu("0", job="4711") | gpu("1")
    snapshots = [at_rest, at_rest, job_runs, job_runs, at_rest]
    created, ended = turnover(snapshots)
    # Start: F labelled series created, F unlabelled ended; end: the reverse. F = 2 here.
    assert created == {("dcgm", UTIL): 2, ("dcgm", TEMP): 2}
    assert ended == {("dcgm", UTIL): 2, ("dcgm", TEMP): 2}


def test_two_jobs_sharing_a_gpu_copy_every_series() -> None:
    shared = gpu("0", job="1") | gpu("0", job="2")
    created, ended = turnover([gpu("0"), shared])
    assert sum(created.values()) == 4  # k·F = 2·2
    assert sum(ended.values()) == 2


def test_the_first_snapshot_is_the_state_before_the_window() -> None:
    created, ended = turnover([gpu("0"), gpu("0")])
    assert not created and not ended


def test_tally_rows_per_family_and_per_construct() -> None:
    tally = Tally(steps=4)
    for index, (util, temp) in enumerate([(8, 8), (8, 8), (10, 6), (8, 8)]):
        tally.add_active(index, ("dcgm", UTIL), util)
        tally.add_active(index, ("dcgm", TEMP), temp)
    tally.add_active(3, ("slurm", "slurm_nodes"), 4)  # present at one step of four
    tally.add_created(("dcgm", UTIL), 6)
    tally.add_ended(("dcgm", UTIL), 4)
    rows = {(r.construct, r.family): r for r in family_rows(tally, duration_s=1800, time_scale=60)}
    util = rows[("dcgm", UTIL)]
    assert (util.created, util.ended, util.peak, util.mean) == (6, 4, 10, 8.5)
    assert util.created_rate.lab_per_hour == 12 and util.created_rate.real_per_hour == 0.2
    assert rows[("slurm", "slurm_nodes")].mean == 1.0  # absent steps count as 0
    totals = {r.construct: r for r in construct_rows(tally, duration_s=1800, time_scale=60)}
    # The construct's peak is the peak of the sum (16), not the sum of family peaks (18).
    assert totals["dcgm"].peak == 16
    assert totals["dcgm"].created == 6 and totals["dcgm"].family == ""
