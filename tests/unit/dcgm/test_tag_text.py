"""The shim's data tables equal the text of the tag and of the go-dcgm tree it requires (vendor archives).

The renderer and value formatting are compared with the tag's running code in tests/conformance/.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from lab import versions
from lab.dcgm.counters import DEFAULT_COUNTERS_PATH, THROTTLE_COUNTERS_PATH, parse_counters
from lab.dcgm.field_ids import FIELD_IDS
from lab.dcgm.gpu_model import EMULATED_FIELDS
from lab.dcgm.xid import UNKNOWN_ERROR, XID_TEXT
from lab.paths import VENDOR_DIR


def archive_file(archive: Path, suffix: str) -> str:
    with tarfile.open(archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(suffix))
        stream = tar.extractfile(member)
        assert stream is not None
        return stream.read().decode()


@pytest.fixture(scope="module")
def const_fields() -> str:
    return archive_file(VENDOR_DIR / versions.GO_DCGM_ARCHIVE, "/pkg/dcgm/const_fields.go")


def tag_file(path: str) -> str:
    return archive_file(VENDOR_DIR / versions.DCGM_EXPORTER_ARCHIVE, f"-{versions.DCGM_EXPORTER_TAG}/{path}")


def go_dcgm_id(text: str, name: str) -> int:
    """dcgm.GetFieldID: the Short constant, else the legacy name table."""
    constant = re.search(rf"^\s*{name}\s+Short\s*=\s*(\d+)\s*$", text, re.MULTILINE)
    legacy = re.search(rf'^\s*"{name}":\s*(\d+),\s*$', text, re.MULTILINE)
    match = constant or legacy
    assert match, f"{name} is not in go-dcgm's const_fields.go"
    return int(match.group(1))


def test_every_emulated_field_has_its_go_dcgm_id(const_fields: str) -> None:
    assert set(FIELD_IDS) == set(EMULATED_FIELDS)
    assert {name: go_dcgm_id(const_fields, name) for name in FIELD_IDS} == FIELD_IDS


def test_the_packaged_counters_are_the_tags_active_rows() -> None:
    tag = parse_counters(tag_file("etc/default-counters.csv"), source="default-counters.csv@tag")
    ours = parse_counters(DEFAULT_COUNTERS_PATH.read_text(), source=str(DEFAULT_COUNTERS_PATH))
    assert ours == tag


def test_the_throttle_profile_is_the_tags_csv_with_its_violation_rows_enabled() -> None:
    tag_text = tag_file("etc/default-counters.csv")
    enabled = re.sub(r"^# (DCGM_FI_DEV_(?:POWER|THERMAL)_VIOLATION,)", r"\1", tag_text, flags=re.MULTILINE)
    tag = parse_counters(enabled, source="default-counters.csv@tag, violation rows enabled")
    ours = parse_counters(THROTTLE_COUNTERS_PATH.read_text(), source=str(THROTTLE_COUNTERS_PATH))
    assert ours == tag
    assert [c.field_name for c in ours if "VIOLATION" in c.field_name] == [
        "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_THERMAL_VIOLATION",
    ]


def test_the_xid_texts_are_the_tags_table() -> None:
    text = tag_file("internal/pkg/collector/xid_errors.go")
    entries = re.findall(r'^\s*(\d+):\s*"((?:[^"\\]|\\.)*)",', text, re.MULTILINE)
    assert [int(index) for index, _ in entries] == list(range(len(entries)))
    assert tuple(message for _, message in entries) == XID_TEXT
    assert re.search(
        rf'unknownErr\s*=\s*"{UNKNOWN_ERROR}"', tag_file("internal/pkg/collector/gpu_collector.go")
    )
