"""Prometheus text exposition of the construct's families (pure: samples in, text out).

Written the way Go's client_golang text encoder writes a registry (Run:ai's exporters use it):
families sorted by name, label pairs sorted by label name, series sorted by label values, floats in
Go's shortest form (``lab.exposition.go_float``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lab.exposition import escape_help, escape_label_value, go_float
from lab.runai.sourced_families import FAMILIES_BY_NAME

Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]  # (family name, labels, value)


class ExpositionError(ValueError):
    """A sample that does not belong to a sourced family, or lacks one of its documented labels (a bug:
    every name must be sourced)."""


def render(samples: Iterable[Sample]) -> str:
    grouped: dict[str, list[tuple[str, str]]] = {}
    for family, labels, value in samples:
        if family not in FAMILIES_BY_NAME:
            raise ExpositionError(f"series {family!r} is not in lab.runai.sourced_families")
        documented = set(FAMILIES_BY_NAME[family].labels)
        names = {name for name, _ in labels}
        if names - documented:
            raise ExpositionError(
                f"{family}: labels {sorted(names - documented)} are not sourced for {family}"
            )
        if names != documented:
            raise ExpositionError(f"{family}: documented labels {sorted(documented - names)} are missing")
        pairs = sorted(labels)
        text = ",".join(f'{name}="{escape_label_value(val)}"' for name, val in pairs)
        grouped.setdefault(family, []).append(
            ("\x00".join(v for _, v in pairs), f"{family}{{{text}}} {go_float(value)}\n")
        )
    out: list[str] = []
    for family in sorted(grouped):
        spec = FAMILIES_BY_NAME[family]
        out.append(f"# HELP {family} {escape_help(spec.help)}\n# TYPE {family} {spec.type}\n")
        out.extend(line for _, line in sorted(grouped[family]))
    return "".join(out)


def labels(mapping: Mapping[str, str | int | float]) -> Labels:
    return tuple((k, v if isinstance(v, str) else go_float(float(v))) for k, v in mapping.items())
