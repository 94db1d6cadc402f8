"""Start-up cost is most of a run: keep the interpreter line and the imports minimal."""

import os
import subprocess


def imported_modules(python, args, env):
    """Module names from `python3 -X importtime` (stderr), in import order."""
    done = subprocess.run(
        [python, "-IS", "-X", "importtime", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return [line.rsplit("|", 1)[1].strip() for line in lines[1:]]  # [0] is the header


def test_interpreter_line_is_isolated_and_skips_site(node):
    first = node.PROLOG.read_text().splitlines()[0]

    assert first == "#!/usr/bin/python3 -IS"
    assert os.access(node.PROLOG, os.X_OK)


def test_epilog_is_a_relative_symlink_to_the_prolog(node):
    assert node.EPILOG.is_symlink()
    assert os.readlink(node.EPILOG) == "../prolog/dcgm-job-mapping"
    assert node.EPILOG.resolve() == node.PROLOG.resolve()


def test_a_full_run_imports_only_os_stat_sys_time_and_fcntl(node):
    env = node.env(SLURM_JOB_ID="42", SLURM_JOB_GPUS="0,1,2,3,4,5,6,7")
    bare = set(imported_modules(node.PYTHON, ["-c", "import os, stat, sys, time"], env))

    script = imported_modules(node.PYTHON, [str(node.PROLOG)], env)

    assert node.read("7") == b"42\n"  # it really ran the whole prolog
    assert set(script) - bare == {"fcntl"}
    assert "site" not in script


def test_a_cpu_only_job_does_not_even_import_fcntl(node):
    env = node.env(SLURM_JOB_ID="42")

    assert "fcntl" not in imported_modules(node.PYTHON, [str(node.PROLOG)], env)
