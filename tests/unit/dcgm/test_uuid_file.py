"""The shim's UUID file is what the Prolog reads: nvidia-smi's csv lines, the UUIDs of the node's series."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import stat
from pathlib import Path

from lab.dcgm import uuid_file
from lab.dcgm.device import node_gpus
from lab.paths import PROJECT_ROOT


def _prolog():  # type: ignore[no-untyped-def]
    loader = importlib.machinery.SourceFileLoader("prolog", str(PROJECT_ROOT / "prolog" / "dcgm-job-mapping"))
    spec = importlib.util.spec_from_loader("prolog", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_prolog_reads_back_the_uuids_the_nodes_series_carry(tmp_path: Path) -> None:
    path = uuid_file.write(str(tmp_path / "uuids" / "%n.csv"), "dgx-002", 8)
    assert path == tmp_path / "uuids" / "dgx-002.csv"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    first = path.read_text().splitlines()[0]
    assert first.startswith("0, GPU-") and len(first) == len("0, GPU-") + 36
    read = _prolog().read_uuids(str(path))
    assert read == {str(gpu.index): gpu.uuid for gpu in node_gpus("dgx-002", 8, "any")}
    # Written again at the next start: replaced whole, the same content.
    assert uuid_file.write(str(tmp_path / "uuids" / "%n.csv"), "dgx-002", 8).read_text() == path.read_text()
