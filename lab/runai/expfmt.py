"""Prometheus text exposition of the construct's families (pure: samples in, text out).

Families registered with Go's client_golang (Run:ai, KAI) are written the way its text encoder does:
families sorted by name, label pairs sorted by label name, series sorted by label values, floats in
Go's shortest form (``lab.exposition.go_float``). kube-state-metrics writes its own text with its
label order; those families keep the order of their entry in :mod:`lab.runai.sourced_families`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from lab.exposition import escape_help, escape_label_value, go_float
from lab.runai.sourced_families import ALL_FAMILIES, KSM_FAMILIES

Labels = tuple[tuple[str, str], ...]
Sample = tuple[str, Labels, float]  # (series name, labels, value); name may end _bucket/_sum/_count

_KSM = {f.name for f in KSM_FAMILIES}


class ExpositionError(ValueError):
    """A sample that does not belong to a sourced family, or lacks one of its documented labels (a bug:
    every name must be sourced)."""


def _family_of(series: str) -> str:
    if series in ALL_FAMILIES:
        return series
    for ending in ("_bucket", "_sum", "_count"):
        base = series.removesuffix(ending)
        if base != series and base in ALL_FAMILIES and ALL_FAMILIES[base].type == "histogram":
            return base
    raise ExpositionError(f"series {series!r} is not in lab.runai.sourced_families")


def render(samples: Iterable[Sample]) -> str:
    grouped: dict[str, list[tuple[str, str]]] = {}
    for series, labels, value in samples:
        family = _family_of(series)
        allowed = set(ALL_FAMILIES[family].labels) | ({"le"} if series.endswith("_bucket") else set())
        names = {name for name, _ in labels}
        if names - allowed:
            raise ExpositionError(f"{series}: labels {sorted(names - allowed)} are not sourced for {family}")
        if ALL_FAMILIES[family].type != "histogram" and names != allowed:
            raise ExpositionError(f"{series}: documented labels {sorted(allowed - names)} are missing")
        pairs = list(labels) if family in _KSM else sorted(labels)
        text = ",".join(f'{name}="{escape_label_value(val)}"' for name, val in pairs)
        body = f"{series}{{{text}}}" if text else series
        grouped.setdefault(family, []).append(
            ("\x00".join(v for _, v in pairs), f"{body} {go_float(value)}\n")
        )
    out: list[str] = []
    for family in sorted(grouped):
        spec = ALL_FAMILIES[family]
        out.append(f"# HELP {family} {escape_help(spec.help)}\n# TYPE {family} {spec.type}\n")
        # Histogram lines keep their written order (buckets by le, then _sum, _count).
        rows = grouped[family] if spec.type == "histogram" else sorted(grouped[family])
        out.extend(line for _, line in rows)
    return "".join(out)


def labels(mapping: Mapping[str, str | int | float]) -> Labels:
    return tuple((k, v if isinstance(v, str) else go_float(float(v))) for k, v in mapping.items())
