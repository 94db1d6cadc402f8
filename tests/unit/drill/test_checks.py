"""The checks every drill shares: accounting of the jobs submitted during it, and scrape gaps."""

from lab.drill.checks import accounting_check, longest_gap, scrape_gap_check


def test_every_submitted_job_in_sacct_with_a_terminal_state_passes() -> None:
    check = accounting_check(
        ["7", "8", "9"], {"7": "COMPLETED", "8": "CANCELLED by 2001", "9": "RUNNING"}, {"9"}
    )
    assert check.passed, check.detail
    assert check.detail == "3 jobs accounted"


def test_a_job_missing_from_sacct_fails_and_is_named() -> None:
    check = accounting_check(["7", "8"], {"7": "COMPLETED"}, set())
    assert not check.passed
    assert check.detail == "not in sacct: 8"


def test_a_job_that_left_the_queue_still_running_in_sacct_fails() -> None:
    """slurmctld lost the job's end (a dbd outage that dropped it): sacct still says RUNNING."""
    check = accounting_check(["12"], {"12": "RUNNING"}, queued=set())
    assert not check.passed
    assert "12=RUNNING" in check.detail


def test_requeued_is_not_terminal() -> None:
    assert not accounting_check(["5"], {"5": "REQUEUED"}, set()).passed
    assert accounting_check(["5"], {"5": "NODE_FAIL"}, set()).passed


def test_longest_gap_counts_the_window_edges() -> None:
    assert longest_gap([10, 25, 40], 0, 50) == 15
    assert longest_gap([10, 25, 40], 0, 100) == 60  # nothing after 40
    assert longest_gap([], 0, 30) == 30
    assert longest_gap([5, 500], 0, 30) == 25  # samples outside the window do not count


def _every(interval: float, start: float, end: float, value: float = 1) -> list[tuple[float, float]]:
    points, t = [], start + 1
    while t <= end:
        points.append((t, value))
        t += interval
    return points


def test_a_target_scraped_every_interval_has_no_gap() -> None:
    samples = {"dcgm/dgx-001:9400": _every(15, 0, 300), "slurm/controller:9341": _every(15, 0, 300)}
    check = scrape_gap_check(samples, 15, 0, 300, broken=set())
    assert check.passed, check.detail


def test_failed_scrapes_count_as_a_gap_for_a_target_not_broken() -> None:
    broken_for_a_minute = [(t, 0.0 if 100 < t < 160 else v) for t, v in _every(15, 0, 300)]
    samples = {"dcgm/dgx-001:9400": broken_for_a_minute, "dcgm/dgx-002:9400": _every(15, 0, 300)}
    check = scrape_gap_check(samples, 15, 0, 300, broken=set())
    assert not check.passed
    assert check.detail.startswith("dcgm/dgx-001:9400: 75.0 s")
    assert scrape_gap_check(samples, 15, 0, 300, broken={"dcgm/dgx-001:9400"}).passed


def test_no_target_at_all_is_a_failure_not_a_pass() -> None:
    assert not scrape_gap_check({}, 15, 0, 300, broken=set()).passed


def test_a_drill_shorter_than_an_interval_passes_on_the_scrapes_before_it() -> None:
    # Samples read from two intervals before the start: none falls in the one-second drill itself.
    samples = {"slurm/controller:9341": [(-29.0, 1.0), (-14.0, 1.0)]}
    check = scrape_gap_check(samples, 15, 0, 1, broken=set())
    assert check.passed and check.detail == "1 targets, longest gap 1.0 s", check.detail
