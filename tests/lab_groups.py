"""Which lab each lab test works on, and the xdist scheduler that keeps a lab's tests together.

`just test` runs three xdist workers with ``--dist loadscope``: a scope goes to one worker and runs there
in order. Here a lab is a scope: every test of the default lab runs on one worker, in module order,
while the others take the modules that bring up a lab of their own (labs share no container, port or
fault record). Outside tests/lab/ a scope is xdist's own (a module).

xdist hands scopes out in the order of their first test, one at a time as a worker runs short of
work (two tests or fewer left), so the suite is ordered (:func:`order_by_lab`) longest lab first and
the scopes outside tests/lab/ (the DCGM conformance module's, the unit modules') after every lab (CI's
figures, BENCHMARKS.md): a long lab that came last would run alone at the end, and a short scope handed
out first leaves its worker asking for a second at once.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from lab.blueprint import runai_blueprint
from lab.blueprint.slurm_blueprint import load
from lab.paths import BLUEPRINTS_DIR, DEFAULT_BLUEPRINT

DEFAULT_LAB = load(DEFAULT_BLUEPRINT).name
# tests/lab/test_runai.py's lab: the shipped Run:ai blueprint's, or the one $LAB_RUNAI_BLUEPRINT names.
RUNAI_BLUEPRINT = Path(os.environ.get("LAB_RUNAI_BLUEPRINT", BLUEPRINTS_DIR / "runai.yaml"))
# Labs made from the default blueprint as shipped, renamed and on host ports of their own (the
# workload and the fence left out: the tests' own jobs need free GPUs, and the fence is proven on the
# default lab): `lab up --hosts systemd` (test_systemd_hosts.py) and the fast drills (test_drills.py).
DERIVED_PORTS = {
    "machines": {"slurmrestd": 6823, "prometheus": 9094, "alertmanager": 9097, "slurm_exporter": 9354},
    "drills": {"slurmrestd": 6825, "prometheus": 9087, "alertmanager": 9088, "slurm_exporter": 9355},
}
# The lab test modules that bring up a lab of their own (Molecule: its scenarios' containers), longest
# first (CI on three workers, 2026-12-07, set-up included: the default lab's modules about 1,700 s, the
# Run:ai lab's 1,400 s, the 26.05 lab's 970 s, the drills' 810 s, the machine-like hosts' 560 s,
# Molecule's 360 s, the racks' 140 s); every other module under tests/lab/ works on the default lab,
# whose scope goes first.
OWN_LAB = {
    "test_runai.py": runai_blueprint.load(RUNAI_BLUEPRINT).name,
    "test_slurm_26_05.py": load(BLUEPRINTS_DIR / "slurm-26.05.yaml").name,
    "test_drills.py": "drills",
    "test_systemd_hosts.py": "machines",
    "test_role_scenarios.py": "molecule",
    "test_racks.py": "racks",
}
LAB_ORDER = [DEFAULT_LAB, *OWN_LAB.values()]


def lab_of(nodeid: str) -> str | None:
    """The lab the test with this node id works on; None for a test outside tests/lab/."""
    path = PurePosixPath(nodeid.split("::", 1)[0])
    if path.parent != PurePosixPath("tests/lab"):
        return None
    return OWN_LAB.get(path.name, DEFAULT_LAB)


def order_by_lab(items: list[Any]) -> None:
    """Reorder a collection in place: the lab tests by LAB_ORDER, then everything else, each module's
    tests in their own order."""

    def rank(item: Any) -> int:
        lab = lab_of(item.nodeid)
        return len(LAB_ORDER) if lab is None else LAB_ORDER.index(lab)

    items.sort(key=rank)  # stable: each lab's and each module's tests keep their order


def lab_scheduling(config: Any, log: Any) -> Any:
    """xdist's LoadScopeScheduling with a lab as the scope of each lab test, handed out in the
    collection's order (order_by_lab). xdist would otherwise sort the scopes by their number of tests
    (its --loadscope-reorder, on by default), which sends a lab of one long test, the drills', last."""
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class LabScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return lab_of(nodeid) or str(super()._split_scope(nodeid))

    return LabScheduling(config, log)
