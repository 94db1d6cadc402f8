"""Inventory of captured series: family → type, help, label names and distinct values per label. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lab.exposition import Family

MAX_VALUES_KEPT = 20  # example values kept per label; the count is always exact


def build(scrapes: Iterable[dict[str, Family]]) -> dict[str, dict[str, Any]]:
    """Merge every scrape of one target into ``{family: {type, help, series, labels: {name: {...}}}}``."""
    merged: dict[str, dict[str, Any]] = {}
    distinct: dict[str, dict[str, set[str]]] = {}
    series: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    for scrape in scrapes:
        for name, family in scrape.items():
            entry = merged.setdefault(name, {"type": family.type, "help": family.help})
            values = distinct.setdefault(name, {})
            seen = series.setdefault(name, set())
            for sample in family.samples:
                seen.add((("__name__", sample.name), *sorted(sample.labels.items())))
                for label, value in sample.labels.items():
                    values.setdefault(label, set()).add(value)
            entry["type"] = family.type or entry["type"]
    for name, entry in merged.items():
        entry["series"] = len(series[name])
        entry["labels"] = {
            label: {"distinct": len(values), "examples": sorted(values)[:MAX_VALUES_KEPT]}
            for label, values in sorted(distinct[name].items())
        }
    return dict(sorted(merged.items()))


def markdown(inventory: dict[str, dict[str, Any]]) -> str:
    lines = ["| family | type | series | labels (distinct values) |", "|---|---|---|---|"]
    for name, entry in inventory.items():
        labels = (
            ", ".join(f"`{label}` ({info['distinct']})" for label, info in entry["labels"].items()) or "–"
        )
        lines.append(f"| `{name}` | {entry['type']} | {entry['series']} | {labels} |")
    return "\n".join(lines) + "\n"
