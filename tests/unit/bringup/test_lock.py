from pathlib import Path

import pytest

from lab.bringup import lock

pytestmark = pytest.mark.race


def test_a_second_command_on_the_same_lab_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    with (
        lock.held(tmp_path, "up"),
        pytest.raises(lock.LabBusyError, match=r"`lab up` \(pid \d+\) is working on this lab"),
        lock.held(tmp_path, "down"),
    ):
        pass
    with lock.held(tmp_path, "down"):  # released when the first command ends
        pass


def test_other_labs_are_not_blocked(tmp_path: Path) -> None:
    with lock.held(tmp_path / "one", "up"), lock.held(tmp_path / "two", "up"):
        pass
