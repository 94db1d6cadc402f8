"""Room for a drill on a busy lab (lab.drill.room), against a scripted Slurm: which node is reserved,
with which flags, what the drill's jobs name, and that the reservation goes whatever the drill's end."""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import TypeVar

import pytest

from lab.drill import room
from lab.drill.probe import DrillError, DrillTimeout, Probe

T = TypeVar("T")
RMA = "ReservationName=rma-dgx-003 StartTime=now Nodes=dgx-003 Flags=MAINT,IGNORE_JOBS,SPEC_NODES"


class _Slurm(Probe):
    """A probe whose Slurm is a script: free GPUs per node (one list entry per poll), reservations
    created and deleted by scontrol, and deletes refused while ``busy`` polls remain."""

    def __init__(self, free: dict[str, list[int]], busy: int = 0) -> None:
        users = [SimpleNamespace(name="alice")]
        nodes = SimpleNamespace(names=list(free))
        super().__init__(
            lab=SimpleNamespace(blueprint=SimpleNamespace(all_users=users, nodes=nodes)), say=print
        )
        self.free, self.busy = free, busy
        self.reservations = [RMA]
        self.commands: list[str] = []

    def free_gpus(self, node: str) -> int:
        polls = self.free[node]
        return polls.pop(0) if len(polls) > 1 else polls[0]

    def in_service(self, node: str) -> bool:
        return node != "dgx-003"

    def run(self, host: str, command: str) -> tuple[int, str]:
        self.commands.append(command)
        if command.startswith("scontrol delete ReservationName="):
            if self.busy:
                self.busy -= 1
                return 1, "Error deleting the reservation: Reservation request busy"
            name = command.split("=", 1)[1]
            self.reservations = [r for r in self.reservations if not r.startswith(f"ReservationName={name} ")]
            return 0, ""
        if command.startswith("scontrol create reservation"):
            self.reservations.append(re.sub(r"^scontrol create reservation ", "", command))
            return 0, ""
        if command.startswith("scontrol show reservation"):
            return 0, "\n".join(self.reservations) + "\n"
        if command.startswith("squeue -h -w"):
            return 0, "17\n18\n"
        if "sbatch --parsable" in command:
            return 0, "41\n"
        return 0, ""

    def until(
        self, condition: Callable[[], T | None], timeout_s: float, what: str, every_s: float = 0.5
    ) -> T:
        for _ in range(20):  # polls without sleeping; a condition the script never meets times out
            value = condition()
            if value:
                return value
        raise DrillTimeout(f"{what}: not within {timeout_s:.0f} s")


def test_a_drill_without_jobs_reserves_nothing() -> None:
    slurm = _Slurm({"dgx-001": [0]})
    with room.reserved(slurm, "xid-storm", 0) as made:
        assert made is None
    assert slurm.commands == []


def test_the_roomiest_node_is_reserved_for_the_drills_user_its_jobs_name_it_and_it_goes_after() -> None:
    slurm = _Slurm({"dgx-001": [1], "dgx-002": [0, 0, 3], "dgx-003": [8], "dgx-004": [2, 2, 2]})
    # dgx-003 has the most free GPUs but is out of service; dgx-004 has the most of those in service.
    with room.reserved(slurm, "shim-restart", 2) as made:
        assert made is not None and made.node == "dgx-004"
        assert made.note.startswith("reserved dgx-004 (lab-drill-shim-restart): 2 GPUs free after ")
        (created,) = [c for c in slurm.commands if c.startswith("scontrol create reservation")]
        assert "Nodes=dgx-004 Users=alice,root Flags=IGNORE_JOBS" in created and "MAINT" not in created
        slurm.submit(1, 10)
        assert "--reservation=lab-drill-shim-restart " in slurm.commands[-1]
        assert slurm.node_with_free_gpus(2) == "dgx-004"
    assert slurm.reservation is None and slurm.reserved_node is None
    assert slurm.reservations == [RMA], "the drill's reservation is deleted, the site's stays"


def test_the_reservation_is_deleted_when_the_drill_fails_once_its_jobs_let_it_go() -> None:
    slurm = _Slurm({"dgx-001": [4]}, busy=3)  # Slurm refuses three deletes while a job still runs
    with pytest.raises(DrillError, match="the drill broke"), room.reserved(slurm, "burst", 4):
        raise DrillError("the drill broke")
    assert slurm.reservations == [RMA]


def test_a_node_whose_jobs_keep_its_gpus_fails_the_drill_naming_them() -> None:
    slurm = _Slurm({"dgx-001": [1], "dgx-002": [1]})
    too_busy = r"dgx-001, reserved for the drill .*\(jobs 17, 18 run there\)"
    with pytest.raises(DrillError, match=too_busy), room.reserved(slurm, "controller-restart", 2):
        pytest.fail("no room was made")
    assert slurm.reservations == [RMA]


def test_a_reservation_a_killed_run_left_is_cancelled_and_deleted_first() -> None:
    slurm = _Slurm({"dgx-001": [8]})
    slurm.reservations.append("ReservationName=lab-drill-burst StartTime=now Nodes=dgx-002 Flags=IGNORE_JOBS")
    with room.reserved(slurm, "dbd-outage", 3):
        pass
    assert "scancel --reservation=lab-drill-burst 2>/dev/null; true" in slurm.commands
    assert slurm.reservations == [RMA]
