"""A build's command runs to its end and hands back its exit status; one that overruns its time or
whose program is missing is the caller's own error, naming the command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab import build_step


class StepError(RuntimeError):
    pass


def test_a_finished_command_gives_its_status_and_output(tmp_path: Path) -> None:
    done = build_step.run(["sh", "-c", "echo out; exit 3"], tmp_path, os.environ, 10, StepError)
    assert (done.returncode, done.stdout) == (3, "out\n")


def test_a_command_past_its_time_is_the_callers_error(tmp_path: Path) -> None:
    with pytest.raises(StepError, match=r"`sleep 5` took longer than 0 s"):
        build_step.run(["sleep", "5"], tmp_path, os.environ, 0.2, StepError)


def test_a_missing_program_is_the_callers_error(tmp_path: Path) -> None:
    with pytest.raises(StepError, match=r"`no-such-build-tool` not found"):
        build_step.run(["no-such-build-tool"], tmp_path, os.environ, 10, StepError)
