"""The probe's submit: one sbatch per job, even when an exec's output comes back empty."""

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
