"""Which lab each lab test works on, and the xdist scheduler that keeps a lab's tests together.

`just test` runs two xdist workers with ``--dist loadscope``: a scope goes to one worker and runs there
in order. Here a lab is a scope: every test of the default lab runs on one worker, in module order,
while the other worker takes the modules that bring up a lab of their own (labs share no container,
port or fault record). Outside tests/lab/ a scope is xdist's own (a module).
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
# The lab test modules that bring up a lab of their own (Molecule: its scenarios' containers); every
# other module under tests/lab/ works on the default lab.
OWN_LAB = {
    "test_racks.py": "racks",
    "test_role_scenarios.py": "molecule",
    "test_runai.py": runai_blueprint.load(RUNAI_BLUEPRINT).name,
    "test_slurm_26_05.py": load(BLUEPRINTS_DIR / "slurm-26.05.yaml").name,
    "test_systemd_hosts.py": "machines",
}


def lab_of(nodeid: str) -> str | None:
    """The lab the test with this node id works on; None for a test outside tests/lab/."""
    path = PurePosixPath(nodeid.split("::", 1)[0])
    if path.parent != PurePosixPath("tests/lab"):
        return None
    return OWN_LAB.get(path.name, DEFAULT_LAB)


def lab_scheduling(config: Any, log: Any) -> Any:
    """xdist's LoadScopeScheduling with a lab as the scope of each lab test."""
    from xdist.scheduler import LoadScopeScheduling

    class LabScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return lab_of(nodeid) or str(super()._split_scope(nodeid))

    return LabScheduling(config, log)
