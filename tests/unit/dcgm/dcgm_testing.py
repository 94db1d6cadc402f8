"""Test helpers for the DCGM shim: fixture paths, an exposition line parser, a fake clock."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from lab.dcgm.counters import Counter
from lab.dcgm.hpc import read_job_file
from lab.dcgm.samples import Sample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "dcgm-exporter-4.5.3-4.8.2"

_LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)\{(?P<labels>.*)\} (?P<value>\S+)$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ParsedLine:
    name: str
    labels: list[tuple[str, str]]
    value: str


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse_line(line: str) -> ParsedLine:
    match = _LINE.match(line)
    assert match, f"not an exposition sample line: {line!r}"
    labels = [(key, _unescape(value)) for key, value in _LABEL.findall(match["labels"])]
    return ParsedLine(match["name"], labels, match["value"])


def sample_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


class FakeClock:
    """Monotonic seconds that only move when a test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def unlink_then_read(path: Path) -> list[str]:
    """A mapping file the prolog/epilog unlinks between the shim's listing and its read."""
    path.unlink()
    return read_job_file(path)


POWER = Counter("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).")


def power_sample(gpu: str, mig_profile: str = "", instance: str = "") -> Sample:
    """One H100's power sample, unlabelled: what the HPC mapping labels."""
    return Sample(
        POWER,
        "70.000000",
        gpu,
        f"GPU-{gpu}",
        "",
        f"nvidia{gpu}",
        "H100",
        "n",
        mig_profile=mig_profile,
        gpu_instance_id=instance,
    )
