"""Fixtures for the DCGM shim tests: a fake clock, a test logger, a node factory."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from lab.dcgm.counters import load_counters
from lab.dcgm.gpu_model import EMULATED_FIELDS
from lab.dcgm.node import EmulatedNode, NodeConfig

from .dcgm_testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def node_log() -> logging.Logger:
    log = logging.getLogger("lab.dcgm.test-node")
    log.setLevel(logging.DEBUG)
    return log


@pytest.fixture
def make_node(clock: FakeClock, node_log: logging.Logger) -> Callable[..., EmulatedNode]:
    counters = load_counters(supported_fields=EMULATED_FIELDS)

    def factory(job_classes: dict[str, str] | None = None, **config: Any) -> EmulatedNode:
        config.setdefault("name", "gpu-node-001")
        return EmulatedNode(
            NodeConfig(**config), counters, job_classes=job_classes, clock=clock, log=node_log
        )

    return factory
