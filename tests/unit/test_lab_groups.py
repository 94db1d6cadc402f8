"""The labs `just test` brings up side by side (tests/lab_groups.py): each on host ports of its own, and
every lab test module's lab first in the suite's order by its cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.blueprint import runai_blueprint
from lab.blueprint.slurm_blueprint import load
from lab.paths import BLUEPRINTS_DIR, DEFAULT_BLUEPRINT
from tests.lab_groups import (
    DEFAULT_LAB,
    DERIVED_PORTS,
    LAB_ORDER,
    OWN_LAB,
    RUNAI_BLUEPRINT,
    lab_of,
    order_by_lab,
)

LAB_TESTS = Path(__file__).parents[1] / "lab"


CENTRAL = {"central_metrics", "central_logs", "central_alerts"}


def _slurm_ports(path: Path) -> set[int]:
    """The host ports a Slurm lab publishes: the centre's only with its fence on."""
    blueprint = load(path)
    ports = blueprint.ports.model_dump()
    return {port for name, port in ports.items() if blueprint.egress.enabled or name not in CENTRAL}


def _host_ports() -> dict[str, set[int]]:
    ports = {
        DEFAULT_LAB: _slurm_ports(DEFAULT_BLUEPRINT),
        "racks": _slurm_ports(LAB_TESTS / "blueprints" / "racks.yaml"),
        "slurm-26-05": _slurm_ports(BLUEPRINTS_DIR / "slurm-26.05.yaml"),
        "runai": set(runai_blueprint.load(RUNAI_BLUEPRINT).ports.model_dump().values()),
    }
    return ports | {lab: set(given.values()) for lab, given in DERIVED_PORTS.items()}  # fence off


def test_labs_that_run_side_by_side_publish_no_port_twice() -> None:
    seen: dict[int, str] = {}
    for lab, ports in _host_ports().items():
        for port in ports:
            assert port not in seen, f"labs {seen[port]!r} and {lab!r} both publish 127.0.0.1:{port}"
            seen[port] = lab


def test_every_lab_test_module_is_placed() -> None:
    modules = {path.name for path in LAB_TESTS.glob("test_*.py")}
    assert set(OWN_LAB) <= modules
    assert LAB_ORDER[0] == DEFAULT_LAB and set(LAB_ORDER) == {DEFAULT_LAB, *OWN_LAB.values()}


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


@pytest.mark.parametrize("lab_module", list(OWN_LAB))
def test_the_order_puts_each_lab_together_longest_first_and_the_rest_after(lab_module: str) -> None:
    items = [
        _Item("tests/unit/test_x.py::test_a"),
        _Item(f"tests/lab/{lab_module}::test_a"),
        _Item("tests/lab/test_alerting.py::test_a"),
        _Item(f"tests/lab/{lab_module}::test_b"),
    ]
    order_by_lab(items)
    labs = [lab_of(item.nodeid) for item in items]
    assert labs == [DEFAULT_LAB, OWN_LAB[lab_module], OWN_LAB[lab_module], None]
    assert [item.nodeid.rsplit("::", 1)[1] for item in items[1:3]] == ["test_a", "test_b"]
