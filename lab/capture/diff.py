"""Diff a capture's inventory against what signals/ documents. Pure.

Problems: a family or label emitted but not documented; a family documented as always emitted but
never seen; a type that differs. Conditional families (``emitted: when: …``) may be absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.capture.signals import Documented


@dataclass(frozen=True)
class Problem:
    kind: str  # undocumented-family | undocumented-label | never-seen | type-differs
    family: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:<19} {self.family}: {self.detail}"


def diff(inventory: dict[str, dict[str, Any]], documented: Documented, source: str) -> list[Problem]:
    problems: list[Problem] = []
    for name, entry in inventory.items():
        doc = documented.families.get(name)
        if doc is None:
            problems.append(
                Problem("undocumented-family", name, f"emitted ({entry['type']}) but not in {source}")
            )
            continue
        if doc.type and entry["type"] != "untyped" and doc.type != entry["type"]:
            problems.append(
                Problem("type-differs", name, f"emitted as {entry['type']}, {source} says {doc.type}")
            )
        allowed = (doc.labels if doc.labels is not None else set()) | documented.common_labels
        for label in sorted(set(entry["labels"]) - allowed):
            problems.append(
                Problem("undocumented-label", name, f"label {label!r} is not documented in {source}")
            )
    for name, doc in sorted(documented.families.items()):
        if name not in inventory and doc.condition is None:
            problems.append(
                Problem(
                    "never-seen",
                    name,
                    f"{source}:{doc.line} documents it as always emitted; not in the capture",
                )
            )
    return problems
