"""Suite-wide: under ``--dist loadscope`` (`just test`) each lab's tests are one scope, the longest lab
first (tests/lab_groups.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lab_groups import lab_scheduling, order_by_lab


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent with -p no:xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    return lab_scheduling(config, log) if config.getvalue("dist") == "loadscope" else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getvalue("dist") == "loadscope":
        order_by_lab(items)
