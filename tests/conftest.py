"""Suite-wide: the lab tests ordered by lab, the longest first, and under ``--dist loadscope`` (`just
test`) each lab's tests one scope (tests/lab_groups.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lab_groups import lab_scheduling, order_by_lab


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return lab_scheduling(config, log) if config.getvalue("dist") == "loadscope" else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Whatever the --dist: xdist's workers collect with it set to "no", and the controller's scheduler
    # hands scopes out in the order they collected.
    order_by_lab(items)
