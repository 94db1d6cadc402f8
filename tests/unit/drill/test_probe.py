"""The probe when an exec's output comes back empty: one sbatch per job, queries asked again."""

from types import SimpleNamespace

import pytest

from lab.drill.probe import DrillError, Probe


class _Answers(Probe):
    """A probe whose container commands answer from a script instead of a lab."""

    def __init__(self, answers: list[str]) -> None:
        users = [SimpleNamespace(name="alice")]
        super().__init__(lab=SimpleNamespace(blueprint=SimpleNamespace(all_users=users)), say=print)
        self.answers = answers
        self.commands: list[str] = []

    def run(self, host: str, command: str) -> tuple[int, str]:
        self.commands.append(command)
        return 0, self.answers.pop(0)


def test_an_empty_exec_answer_is_read_again_from_the_file_not_submitted_again() -> None:
    probe = _Answers(["", "", "41\n"])
    assert probe.submit(1, 20) == "41"
    assert sum("sbatch --parsable" in c for c in probe.commands) == 1
    assert probe.commands[1:] == ["cat /tmp/drill-sbatch-0"] * 2
    assert probe.submitted == ["41"]


def test_an_answer_that_is_never_a_job_id_is_an_error() -> None:
    probe = _Answers(["", "", "", ""])
    with pytest.raises(DrillError, match="not a job id"):
        probe.submit(1, 20)
    assert probe.submitted == []


def test_a_query_whose_answer_came_back_empty_is_asked_again() -> None:
    detail = "JobId=7 Nodes=dgx-002 CPU_IDs=0-13 Mem=250000 GRES=gpu:h100:2(IDX:4-5)\n"
    probe = _Answers(["", detail])
    assert probe.job_nodes_gpus("7") == ("dgx-002", [4, 5])
    assert probe.commands == ["scontrol show job -d 7"] * 2


def test_a_query_that_stays_empty_is_an_error_not_a_guess() -> None:
    probe = _Answers([""] * 4)
    with pytest.raises(DrillError, match="holds no GPUs"):
        probe.job_nodes_gpus("7")
    assert len(probe.commands) == 4
