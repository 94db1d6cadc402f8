"""Room for a drill's jobs on a busy lab, made as a site's operator makes it: a reservation.

Beside the live workload, a GPU a job frees is taken by the next pending job within a scheduler cycle,
so a drill that only waits for free GPUs can wait for ever (the workload's jobs run for hours: Helios
Venus' mean is 3.6 h, blueprints/default.yaml). The drill reserves the node in service with the most
free GPUs first: ``scontrol create reservation`` with ``Flags=IGNORE_JOBS`` (the node's running jobs
go on to their end) and ``Users=`` the drill's user, so no job outside the reservation starts there
afterwards. Every job the drill submits names the reservation (:meth:`lab.drill.probe.Probe.submit`),
so it starts there and nowhere else. Not MAINT: a maintenance reservation would make the exporter
report the node ``maint`` and its ``SlurmNodeWarning`` fire (its rules file, v1.8.4). The reservation
is deleted after the drill, whatever its end; one a killed drill left behind is deleted first.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from lab.drill.probe import DrillError, DrillTimeout, Probe

PREFIX = "lab-drill-"  # the reservations the drills own; no other is touched
# How long a drill waits for its reserved node's running jobs to free the GPUs it needs. Longer than
# Helios Venus' median GPU job (204 s); a node whose jobs hold it longer is too busy to drill now.
ROOM_WAIT_S = 600
DURATION_MIN = 120  # the reservation's end, should the drill's own delete never come (a killed run)


@dataclass(frozen=True)
class Room:
    reservation: str
    node: str
    gpus: int
    waited_s: float  # from the reservation to the GPUs free

    @property
    def note(self) -> str:
        gpus = f"{self.gpus} GPU{'s' if self.gpus > 1 else ''}"
        return f"reserved {self.node} ({self.reservation}): {gpus} free after {self.waited_s:.0f} s"


def _reservations(probe: Probe) -> list[str]:
    text = probe.slurm("scontrol show reservation --oneliner 2>/dev/null || true")
    return [
        item.split("=", 1)[1]
        for line in text.splitlines()
        for item in line.split()
        if item.startswith("ReservationName=")
    ]


def delete_left_behind(probe: Probe) -> list[str]:
    """Delete the drills' reservations a killed run left (their jobs, if any, are cancelled first)."""
    left = [name for name in _reservations(probe) if name.startswith(PREFIX)]
    for name in left:
        probe.slurm(f"scancel --reservation={shlex.quote(name)} 2>/dev/null; true")
        probe.until(partial(_deleted, probe, name), 120, f"reservation {name} deleted")
    return left


def _deleted(probe: Probe, name: str) -> bool:
    """Delete ``name``; False while Slurm refuses because a job still runs in it."""
    code, _ = probe.run("controller", f"scontrol delete ReservationName={shlex.quote(name)}")
    return code == 0 or name not in _reservations(probe)


def _roomiest_node(probe: Probe) -> str:
    free = {str(n): probe.free_gpus(n) for n in probe.lab.blueprint.nodes.names if probe.in_service(n)}
    if not free:
        raise DrillError("no node is in service to drill on. Fix: `lab status`, resume a node, drill again.")
    return max(free, key=lambda n: free[n])


@contextmanager
def reserved(probe: Probe, drill: str, gpus: int) -> Iterator[Room | None]:
    """A node reserved for ``drill`` with ``gpus`` GPUs free in it, for the drill's duration; no
    reservation for a drill that needs none (``gpus`` 0)."""
    if gpus == 0:
        yield None
        return
    for name in delete_left_behind(probe):
        probe.say(f"deleted reservation {name}, left by a run that did not end")
    node = _roomiest_node(probe)
    name = f"{PREFIX}{drill}"
    user = probe.lab.blueprint.all_users[0].name
    probe.slurm(
        f"scontrol create reservation ReservationName={name} StartTime=now Duration={DURATION_MIN} "
        f"Nodes={node} Users={user},root Flags=IGNORE_JOBS"
    )
    began = time.monotonic()
    probe.reservation, probe.reserved_node = name, node
    try:
        try:
            probe.until(lambda: probe.free_gpus(node) >= gpus, ROOM_WAIT_S, f"{gpus} free GPUs on {node}")
        except DrillTimeout:
            running = probe.slurm(f"squeue -h -w {node} -t RUNNING -o %i").split()
            raise DrillError(
                f"the lab is too busy: {node}, reserved for the drill ({name}), still had fewer than {gpus} "
                f"free GPUs after {ROOM_WAIT_S} s (jobs {', '.join(running)} run there). Fix: drill later, "
                "or with the workload held (`lab up --no-workload`)."
            ) from None
        made = Room(name, node, gpus, time.monotonic() - began)
        probe.say(made.note)
        yield made
    finally:
        probe.reservation = probe.reserved_node = None
        probe.until(partial(_deleted, probe, name), 240, f"reservation {name} deleted after its jobs")
