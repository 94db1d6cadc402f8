"""Read what a signals/ file documents, from its markdown tables. Pure.

A table whose first header cell is ``family`` documents families: the backticked name in the first
cell; optional columns ``type``, ``labels`` (backticked names, or – for none) and ``emitted``
(``always``, or ``when: <condition>`` for families that need a condition the capture may not meet).
A table whose first header cell is ``label`` documents labels allowed on every family of the file, and
so does a family row of type ``label`` (dcgm-exporter's label fields, such as DCGM_FI_DRIVER_VERSION).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_BACKTICKED = re.compile(r"`([^`]+)`")


@dataclass
class DocumentedFamily:
    name: str
    type: str | None = None
    labels: set[str] | None = None  # None: the file's label tables apply
    condition: str | None = None  # None: always emitted
    line: int = 0


@dataclass
class Documented:
    families: dict[str, DocumentedFamily] = field(default_factory=dict)
    common_labels: set[str] = field(default_factory=set)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse(text: str) -> Documented:
    documented = Documented()
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = [cell.lower() for cell in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        row = dict(zip(header, cells, strict=False))
        if header[0] == "family":
            _family_row(documented, row, cells[0], number)
        elif header[0] == "label":
            documented.common_labels.update(_BACKTICKED.findall(cells[0]))
    return documented


def _family_row(documented: Documented, row: dict[str, str], first: str, number: int) -> None:
    names = _BACKTICKED.findall(first)
    if not names:
        return
    labels = None
    if "labels" in row:
        labels = set() if row["labels"] in ("–", "-", "") else set(_BACKTICKED.findall(row["labels"]))
    if (row.get("type") or "").strip() == "label":  # dcgm-exporter's label fields become labels, not series
        documented.common_labels.update(names)
        return
    emitted = row.get("emitted", "always").strip()
    condition = emitted[len("when:") :].strip() if emitted.lower().startswith("when:") else None
    for name in names:
        documented.families[name] = DocumentedFamily(name, row.get("type") or None, labels, condition, number)
