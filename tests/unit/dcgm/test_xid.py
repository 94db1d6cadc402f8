"""XID: attributes as the collector sets them, and fault injection through --fault-dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lab.dcgm.node import EmulatedNode
from lab.dcgm.xid import XID_TEXT, xid_attributes

from .dcgm_testing import FakeClock, parse_line, sample_lines


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (0, "No Error"),
        (13, "Graphics Engine Exception"),
        (48, "Double Bit ECC Error"),
        (79, "GPU has fallen off the bus"),
        (94, "Contained ECC error"),
        (172, "Uncorrectable SRAM Error"),
        (173, "Unknown Error"),
        (999, "Unknown Error"),
    ],
)
def test_err_code_and_err_msg_come_from_upstreams_table(code: int, message: str) -> None:
    assert xid_attributes(code) == (("err_code", str(code)), ("err_msg", message))


def test_table_covers_codes_0_to_172() -> None:
    assert len(XID_TEXT) == 173


def xid_line(node: EmulatedNode, gpu: str) -> tuple[str, dict[str, str]]:
    for line in sample_lines(node.scrape()):
        parsed = parse_line(line)
        if parsed.name == "DCGM_FI_DEV_XID_ERRORS" and dict(parsed.labels)["gpu"] == gpu:
            return parsed.value, dict(parsed.labels)
    raise AssertionError("no XID series")


def remapped_rows(node: EmulatedNode, gpu: str) -> str:
    for line in sample_lines(node.scrape()):
        parsed = parse_line(line)
        if parsed.name == "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" and dict(parsed.labels)["gpu"] == gpu:
            return parsed.value
    raise AssertionError("no remapped rows series")


def test_healthy_gpu_reports_zero_with_no_error_attributes(make_node: Callable[..., EmulatedNode]) -> None:
    value, labels = xid_line(make_node(gpus=1), "0")
    assert (value, labels["err_code"], labels["err_msg"]) == ("0", "0", "No Error")


def test_injected_xid_is_sticky_until_zero_is_written(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], clock: FakeClock
) -> None:
    node = make_node(gpus=2, fault_dir=tmp_path)
    fault = tmp_path / "gpu-node-001" / "1"
    fault.parent.mkdir()
    fault.write_text("79\n")
    value, labels = xid_line(node, "1")
    assert (value, labels["err_code"], labels["err_msg"]) == ("79", "79", "GPU has fallen off the bus")
    assert xid_line(node, "0")[0] == "0"
    fault.unlink()
    clock.advance(15)
    assert xid_line(node, "1")[0] == "79"
    fault.write_text("0")
    assert xid_line(node, "1")[1]["err_msg"] == "No Error"


def test_row_remap_xid_counts_a_remapped_row(tmp_path: Path, make_node: Callable[..., EmulatedNode]) -> None:
    node = make_node(gpus=1, fault_dir=tmp_path)
    (tmp_path / "gpu-node-001").mkdir()
    assert remapped_rows(node, "0") == "0"
    (tmp_path / "gpu-node-001" / "0").write_text("63")
    assert remapped_rows(node, "0") == "1"
    assert remapped_rows(node, "0") == "1"  # the same event is counted once


@pytest.mark.parametrize("content", ["oops", "-4", ""])
def test_a_bad_fault_file_is_ignored_and_logged(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], caplog: pytest.LogCaptureFixture, content: str
) -> None:
    node = make_node(gpus=1, fault_dir=tmp_path)
    (tmp_path / "gpu-node-001").mkdir()
    (tmp_path / "gpu-node-001" / "0").write_text(content)
    assert xid_line(node, "0")[0] == "0"
    assert "Injected XID file" in caplog.text
