import subprocess
from pathlib import Path

import pytest

from lab.workload import background


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIFACTORY_LAB_STATE", str(tmp_path))
    (tmp_path / "lab1").mkdir()
    return tmp_path


def test_a_stale_pid_file_means_not_running(state: Path) -> None:
    (state / "lab1" / "workload.pid").write_text("999999999\n")
    assert background.running_pid("lab1") is None
    assert background.stop("lab1") is False


def _detached_sleep() -> int:
    """A process detached like the real one (not our child), so init reaps it, no zombie is left."""
    return int(
        subprocess.run(
            ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True
        ).stdout
    )


def test_stop_terminates_the_recorded_process(state: Path) -> None:
    pid = _detached_sleep()
    (state / "lab1" / "workload.pid").write_text(f"{pid}\n")
    assert background.running_pid("lab1") == pid
    assert background.stop("lab1") is True
    assert background.running_pid("lab1") is None
    assert not (state / "lab1" / "workload.pid").exists()


def test_the_way_into_slurm_is_named_while_the_workload_runs(state: Path) -> None:
    pid = _detached_sleep()
    (state / "lab1" / "workload.pid").write_text(f"{pid}\n")
    (state / "lab1" / "workload.via").write_text("pyslurm\n")
    assert background.submit_way("lab1") == "pyslurm"
    assert background.stop("lab1") is True
    assert background.submit_way("lab1") is None and not (state / "lab1" / "workload.via").exists()
