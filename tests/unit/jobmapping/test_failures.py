"""Bad input and broken state: every case exits 0, logs the job id and the problem, and leaves
other files byte-identical and everything outside the mapping directory untouched."""

import fcntl
import os
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def busy(node):
    """A node where job 7 already runs on GPUs 0-3: the state every failure must leave intact."""
    node.prolog(7, "0,1,2,3").assert_ok(7)
    return node


def state(node):
    return node.snapshot(outside=True), node.snapshot(outside=False)


def test_missing_parent_directory_is_not_created(node):
    deep = node.root / "missing" / "job-mapping"
    before = state(node)

    run = node.prolog(42, "0", DCGM_HPC_JOB_MAPPING_DIR=str(deep))

    run.assert_skipped(42, "cannot create mapping dir: No such file or directory")
    assert state(node) == before
    assert not (node.root / "missing").exists()


def test_mapping_dir_that_is_a_file(node):
    node.dir.write_bytes(b"not a dir\n")
    before = state(node)

    run = node.prolog(42, "0")

    run.assert_skipped(42, "Not a directory")
    assert state(node) == before


def test_relative_mapping_dir_is_refused(node):
    run = node.prolog(42, "0", DCGM_HPC_JOB_MAPPING_DIR="job-mapping")

    run.assert_skipped(42, "not an absolute path")


def test_epilog_with_a_missing_directory(node):
    run = node.epilog(42, "0")

    run.assert_skipped(42, "mapping dir missing")
    assert not node.dir.exists()


def test_unwritable_directory(node_at):
    """As root the script runs as nobody; as another user the directory is made read-only."""
    base = Path(tempfile.mkdtemp(prefix="jm-unwritable-"))
    try:
        base.chmod(0o755)  # nobody must be able to reach the tree
        node = node_at(base)
        node.prolog(7, "0,1").assert_ok(7)
        user = 65534 if os.geteuid() == 0 else None
        if user is None:
            node.dir.chmod(0o555)
        before = state(node)

        run = node.prolog(42, "0,1", user=user, DCGM_JOB_MAPPING_LOG="-")

        run.assert_skipped(42, "Permission denied")
        assert state(node) == before
    finally:
        for path in base.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(base)


def test_write_failure_keeps_the_old_file_and_no_temp(busy):
    """RLIMIT_FSIZE=0 makes write(2) fail (EFBIG) like a full disk (ENOSPC): same path."""
    before = state(busy)

    def no_file_growth():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    run = busy.run("prolog", 42, "0,1", preexec_fn=no_file_growth)

    run.assert_skipped(42, "gpu 0: File too large")
    assert "gpu 1: File too large" in run.log["error"]
    assert state(busy) == before  # no .tmp.* left, 0 and 1 still hold only job 7


def test_garbage_lines_skip_that_gpu_only(busy):
    (busy.dir / "0").write_bytes(b"7\nhello world\n")
    before_outside, before_inside = state(busy)

    run = busy.prolog(42, "0,1")

    run.assert_skipped(42, "gpu 0: line 2 'hello world' is not a job id", result="partial")
    assert busy.read("0") == b"7\nhello world\n"
    assert busy.read("1") == b"7\n42\n"
    after_outside, after_inside = state(busy)
    assert after_outside == before_outside
    assert {k: v for k, v in after_inside.items() if k != "1"} == {
        k: v for k, v in before_inside.items() if k != "1"
    }


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"7\r\n", "is not a job id"),  # the exporter would label hpc_job="7\r"
        (b"7\n\n8\n", "line 2 '' is not a job id"),  # would label hpc_job=""
        (b"7\n\xff\n", "not ASCII"),
        (b"1\n" * 40000, "larger than 65536 bytes"),
    ],
)
def test_unparseable_file_is_left_alone(busy, content, why):
    (busy.dir / "2").write_bytes(content)
    before = state(busy)

    run = busy.epilog(42, "2")

    run.assert_skipped(42, why)
    assert state(busy) == before


def test_directory_where_a_file_should_be(busy):
    (busy.dir / "5").mkdir()
    before = state(busy)

    run = busy.prolog(42, "5")

    run.assert_skipped(42, "gpu 5: not a regular file")
    assert state(busy) == before


def test_fifo_where_a_file_should_be_does_not_hang(busy):
    os.mkfifo(busy.dir / "5")
    before = state(busy)

    run = busy.prolog(42, "5")

    run.assert_skipped(42, "gpu 5: not a regular file")
    assert state(busy) == before


def test_symlinked_gpu_file_is_never_followed(busy):
    target = busy.root / "precious.txt"
    target.write_bytes(b"secret\n")
    (busy.dir / "5").symlink_to("../precious.txt")
    before = state(busy)

    prolog = busy.prolog(42, "5")
    epilog = busy.epilog(42, "5")

    prolog.assert_skipped(42, "gpu 5: not a regular file")
    epilog.assert_skipped(42, "gpu 5: not a regular file")
    assert state(busy) == before
    assert target.read_bytes() == b"secret\n"


def test_planted_temp_symlink_is_not_written_through(busy):
    target = busy.root / "precious.txt"
    target.write_bytes(b"secret\n")
    (busy.dir / ".tmp.0").symlink_to("../precious.txt")
    before_outside = busy.snapshot()

    busy.prolog(42, "0").assert_ok(42)

    assert busy.snapshot() == before_outside
    assert busy.read("0") == b"7\n42\n"
    assert not (busy.dir / ".tmp.0").exists()


def test_lock_file_that_is_a_directory(node):
    node.dir.mkdir()
    (node.dir / ".lock").mkdir()
    before = state(node)

    run = node.prolog(42, "0")

    run.assert_skipped(42, "mapping dir: .lock: Is a directory")
    assert state(node) == before


@pytest.mark.parametrize(
    "job",
    ["42; rm -rf /", "", "-1", "4.2", "\uff14\uff12", " 42", "12345678901"],
)
def test_job_id_that_is_not_digits(busy, job):
    before = state(busy)

    run = busy.prolog(job, "0")

    run.assert_skipped(job, "is not a job id")
    assert state(busy) == before


def test_missing_job_id(busy):
    before = state(busy)

    run = busy.prolog(None, "0")

    run.assert_skipped("", "SLURM_JOB_ID '' is not a job id")
    assert state(busy) == before


def test_gpu_values_that_are_not_indices(busy):
    before_outside = busy.snapshot()

    run = busy.prolog(42, "0,gpu1,-1,0-3,GPU-6a3d1b2c")

    run.assert_skipped(42, "SLURM_JOB_GPUS entry 'gpu1' is not a GPU index", result="partial")
    for bad in ("'-1'", "'0-3'", "'GPU-6a3d1b2c'"):
        assert bad in run.log["error"]
    assert run.log["gpus"] == "0"
    assert busy.read("0") == b"7\n42\n"
    assert busy.snapshot() == before_outside


def test_no_gpus_at_all(node):
    run = node.prolog(42, None)

    run.assert_skipped(42, "no GPUs in SLURM_JOB_GPUS or CUDA_VISIBLE_DEVICES")
    assert not node.dir.exists()  # a CPU-only job touches nothing


def test_lock_held_too_long_gives_up_in_time(busy):
    before = state(busy)
    lock = os.open(busy.dir / ".lock", os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)

        run = busy.prolog(42, "0", DCGM_JOB_MAPPING_LOCK_TIMEOUT="0.2")
    finally:
        os.close(lock)

    run.assert_skipped(42, "lock busy for 0.2 s, nothing written")
    assert 200 <= float(run.log["duration_ms"]) < 2000
    assert state(busy) == before


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "ten"])
def test_lock_timeout_out_of_range_falls_back_to_five_seconds(busy, value):
    run = busy.prolog(42, "0", DCGM_JOB_MAPPING_LOCK_TIMEOUT=value)

    run.assert_skipped(42, "is not 0 to 5 s", result="partial")
    assert busy.read("0") == b"7\n42\n"


@pytest.mark.parametrize("name", ["../evil", "", "."])
def test_bad_node_name_for_percent_n(node, name):
    before = state(node)

    run = node.prolog(42, "0", SLURMD_NODENAME=name, DCGM_HPC_JOB_MAPPING_DIR=str(node.root / "%n"))

    run.assert_skipped(42, "bad SLURMD_NODENAME")
    assert state(node) == before


def test_unsupported_script_context(busy):
    before = state(busy)

    run = busy.run("", 42, "0", SLURM_SCRIPT_CONTEXT="prolog_task")

    run.assert_skipped(42, "unsupported SLURM_SCRIPT_CONTEXT=prolog_task")
    assert run.log["action"] == "unknown"
    assert state(busy) == before


def test_unknown_action_from_the_directory_name(busy, tmp_path):
    elsewhere = tmp_path / "bin" / "dcgm-job-mapping"
    elsewhere.parent.mkdir()
    elsewhere.symlink_to(busy.PROLOG)
    before = state(busy)

    run = busy.run("", 42, "0", script=elsewhere)

    run.assert_skipped(42, "cannot tell prolog from epilog")
    assert state(busy) == before


def test_unknown_argument(busy):
    run = busy.run("", 42, "0", args=("start",))

    run.assert_skipped(42, "unknown argument 'start'")


def test_missing_explicit_config_file(node):
    node.conf.unlink()

    run = node.prolog(42, "0")

    run.assert_skipped(42, "not found", result="partial")
    assert node.read("0") == b"42\n"


def test_unreadable_config_file(node):
    node.conf.unlink()
    node.conf.mkdir()

    run = node.prolog(42, "0")

    run.assert_skipped(42, "Is a directory", result="partial")


def test_unwritable_log_goes_to_stderr(busy):
    missing = busy.base / "no-such-dir" / "x.log"

    run = busy.prolog(42, "0", DCGM_JOB_MAPPING_LOG=str(missing))

    run.assert_ok(42)
    assert run.stderr.startswith("ts=") and run.stderr.count("\n") == 1
    assert not missing.parent.exists()


def test_an_internal_error_still_exits_zero(busy):
    """Fault injection in the child only: os.uname is broken before the script runs."""
    code = (
        "import os, runpy, sys; os.uname = None; sys.argv = [sys.argv[1]];"
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    env = busy.env(SLURM_JOB_ID="42", SLURM_JOB_GPUS="0", SLURMD_NODENAME=None)

    done = subprocess.run(
        [busy.PYTHON, "-IS", "-c", code, str(busy.PROLOG)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )

    assert done.returncode == 0
    line = busy.log_lines()[-1]
    assert "result=error" in line and "job_id=42" in line
    assert 'error="internal error TypeError' in line
