import math

import pytest

from lab.churn.jobs import SACCT_FIELDS, SacctError, gpus_of, parse_sacct, running_timeline, sacct_argv

# Captured from the default lab (Slurm 24.11.5) with
# SLURM_TIME_FORMAT=%s sacct -X -n -P -a -D -S … -E … -o JobIDRaw,Start,End,State,AllocTRES
SACCT = """\
336|1796036283|1796036343|TIMEOUT|billing=112,cpu=112,gres/gpu=8,mem=2000000M,node=1
338|1796036380|1796036381|CANCELLED by 2005|billing=14,cpu=14,gres/gpu=1,mem=250000M,node=1
343|1796036383|1796036383|COMPLETED|billing=14,cpu=14,gres/gpu=1,mem=250000M,node=1
344|1796036383|Unknown|RUNNING|billing=14,cpu=14,gres/gpu=1,mem=250000M,node=1
337|None|1796036212|CANCELLED by 2003|
"""


def test_sacct_lines_become_gpu_jobs_with_unix_times() -> None:
    jobs = parse_sacct(SACCT)
    assert [j.job_id for j in jobs] == ["336", "338", "343", "344"]
    assert jobs[0].gpus == 8 and jobs[0].start == 1796036283 and jobs[0].end == 1796036343
    assert jobs[1].state == "CANCELLED"
    # A job that started and ended within one second still ran: [start, end + 1 s).
    assert jobs[2].end_exclusive == 1796036384
    assert math.isinf(jobs[3].end)


def test_jobs_without_gpus_or_that_never_started_are_left_out() -> None:
    text = "7|100|200|COMPLETED|billing=1,cpu=1,mem=1000M,node=1\n8|Unknown|Unknown|PENDING|\n"
    assert parse_sacct(text) == []


@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("billing=28,cpu=28,gres/gpu=2,mem=500000M,node=1", 2),
        ("cpu=8,gres/gpu:h100=4,gres/gpu=4,node=1", 4),
        ("cpu=8,gres/gpu:h100=2,gres/gpu:a100=1", 3),
        ("cpu=8,gres/gpumem=80G", 0),
        ("", 0),
    ],
)
def test_gpus_come_from_alloc_tres(tres: str, gpus: int) -> None:
    assert gpus_of(tres) == gpus


def test_lines_not_in_unix_seconds_say_how_to_fix_it() -> None:
    with pytest.raises(SacctError, match="SLURM_TIME_FORMAT=%s"):
        parse_sacct("9|2026-11-30T10:00:00|2026-11-30T10:01:00|COMPLETED|gres/gpu=1\n")
    with pytest.raises(SacctError, match=r"expected 5 '\|'-separated fields"):
        parse_sacct("9|100|200\n")


def test_the_command_asks_for_exactly_the_parsed_fields() -> None:
    argv = sacct_argv("2026-11-30T10:00:00", "2026-11-30T11:00:00")
    assert argv[:6] == ["sacct", "-X", "-n", "-P", "-a", "-D"]
    assert argv[argv.index("-o") + 1].split(",") == list(SACCT_FIELDS)


def test_running_timeline_uses_exact_start_and_end_within_the_window() -> None:
    jobs = parse_sacct(
        "1|90|120|COMPLETED|gres/gpu=1\n"  # began before the window
        "2|105|105|COMPLETED|gres/gpu=2\n"  # one second long: [105, 106)
        "3|110|Unknown|RUNNING|gres/gpu=8\n"  # still running at the end
        "4|110|130|COMPLETED|cpu=1\n"  # no GPU
    )
    assert running_timeline(jobs, 100, 200) == [(100, 1), (105, 2), (106, 1), (110, 2), (121, 1), (200, 1)]
