"""Parse the Prometheus text exposition format (version 0.0.4) into families. Pure.

A sample line looks like::

    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-…",Hostname="dgx-001",hpc_job="42"} 97
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(rf"^(?P<name>{_NAME})(?:\{{(?P<labels>.*)\}})?\s+(?P<value>\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)')
_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


class ExpositionError(ValueError):
    """A line that is not valid exposition text; the message names the line."""


@dataclass
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass
class Family:
    name: str
    type: str = "untyped"
    help: str = ""
    samples: list[Sample] = field(default_factory=list)


_ESCAPES = {"n": "\n", "\\": "\\", '"': '"'}


def _unescape(value: str) -> str:
    """One left-to-right pass: ``\\\\n`` is a backslash then ``n``, not a newline."""
    return re.sub(r"\\(.)", lambda match: _ESCAPES.get(match.group(1), "\\" + match.group(1)), value)


def _labels(text: str, line_number: int) -> dict[str, str]:
    labels: dict[str, str] = {}
    position = 0
    while position < len(text):
        match = _LABEL.match(text, position)
        if match is None:
            raise ExpositionError(f"line {line_number}: cannot read labels {{{text}}}")
        labels[match.group(1)] = _unescape(match.group(2))
        position = match.end()
    return labels


def parse(text: str) -> dict[str, Family]:
    """Families by name. Samples of histogram/summary series (_bucket, _sum, _count) join their family."""
    families: dict[str, Family] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                family = families.setdefault(parts[2], Family(parts[2]))
                rest = parts[3] if len(parts) > 3 else ""
                if parts[1] == "HELP":
                    family.help = _unescape(rest)
                else:
                    family.type = rest.strip()
            continue
        match = _SAMPLE.match(line)
        if match is None:
            raise ExpositionError(f"line {number}: not a sample: {line[:120]}")
        try:
            value = float(match["value"])
        except ValueError as error:
            raise ExpositionError(f"line {number}: bad value {match['value']!r}") from error
        name = match["name"]
        sample = Sample(name, _labels(match["labels"] or "", number), value)
        _family_of(families, name).samples.append(sample)
    return families


def _family_of(families: dict[str, Family], sample_name: str) -> Family:
    if sample_name in families:
        return families[sample_name]
    for family in families.values():
        if any(sample_name == family.name + suffix for suffix in _SUFFIXES.get(family.type, ())):
            return family
    return families.setdefault(sample_name, Family(sample_name))
