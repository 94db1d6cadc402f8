"""A failing PCIe link (``--pcie-replay-dir``): the GPU's replay counter grows at the injected rate,
the other GPUs' do not, and a bad fault file never fails a scrape."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.dcgm.node import EmulatedNode
from lab.dcgm.pcie import MAX_REPLAYS_PER_MIN, read_pcie_replays, write_pcie_replays

from .dcgm_testing import FakeClock

NODE = "dgx-001"
REPLAYS = "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"


def replays(node: EmulatedNode) -> dict[str, int]:
    samples, _, _ = node.samples()
    return {s.gpu: int(s.value) for s in samples if s.counter.field_name == REPLAYS}


def test_the_faulted_gpu_counts_its_rate_and_keeps_the_count_after_the_fault_ends(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], clock: FakeClock
) -> None:
    node = make_node(name=NODE, gpus=3, pcie_replay_dir=tmp_path / "pcie")
    before = replays(node)
    write_pcie_replays(tmp_path / "pcie", NODE, 1, 60)
    for _ in range(8):  # two minutes of 15 s scrapes at 60 a minute: 120 replays
        clock.advance(15.0)
        node.samples()
    during = replays(node)
    assert during["1"] - before["1"] == 120
    # A healthy link replays about once a GPU-week: none in two minutes.
    assert during["0"] == before["0"] and during["2"] == before["2"]
    write_pcie_replays(tmp_path / "pcie", NODE, 1, 0)
    assert not (tmp_path / "pcie" / NODE / "1").exists()
    clock.advance(60.0)
    assert replays(node)["1"] == during["1"], "a counter never goes back"


def test_a_slow_rate_carries_its_fractions_to_the_next_scrape(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], clock: FakeClock
) -> None:
    node = make_node(name=NODE, gpus=1, pcie_replay_dir=tmp_path / "pcie")
    start = replays(node)["0"]
    write_pcie_replays(tmp_path / "pcie", NODE, 0, 3)  # 0.75 per 15 s scrape
    counts = []
    for _ in range(4):
        clock.advance(15.0)
        counts.append(replays(node)["0"] - start)
    assert counts == [0, 1, 2, 3]


@pytest.mark.parametrize("text", ["many", "-5", "0", str(MAX_REPLAYS_PER_MIN + 1), ""])
def test_a_bad_file_is_logged_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    path = tmp_path / NODE / "2"
    path.parent.mkdir(parents=True)
    path.write_text(f"{text}\n")
    log = logging.getLogger("pcie-test")
    with caplog.at_level(logging.WARNING, logger="pcie-test"):
        assert read_pcie_replays(tmp_path, NODE, 2, log) is None
    assert "must hold replays per minute" in caplog.text
    assert read_pcie_replays(tmp_path, NODE, 3, log) is None  # no file: a healthy link


def test_the_writer_refuses_a_rate_out_of_range(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"0\.\.100000"):
        write_pcie_replays(tmp_path, NODE, 0, -1)
    assert not (tmp_path / NODE).exists()
