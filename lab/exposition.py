"""The Prometheus text exposition format (version 0.0.4), for everyone in the lab: what a value and
an escaped string look like when rendered (the Run:ai construct's client_golang-style renderer is built
on these; the DCGM shim keeps the 4.5.3-4.8.2 tag's template renderer, which escapes nothing), and a
parser into families for the host side.

The parser is prometheus_client's, imported inside :func:`parse` so that the node images, which carry
this module for the rendering primitives, stay stdlib-only. A sample line looks like::

    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-…",Hostname="dgx-001",hpc_job="42"} 97
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal

PROMETHEUS_TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_COUNTER_TYPE = re.compile(r"^#\s*TYPE\s+(\S+)\s+counter\s*$", re.MULTILINE)


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


def go_float(value: float) -> str:
    """Format like Go ``strconv.FormatFloat(v, 'g', -1, 64)`` with expfmt's special cases."""
    if value == 0:
        return "0"
    if value == 1:
        return "1"
    if value == -1:
        return "-1"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    # repr() gives the shortest round-tripping digits, as Go's shortest formatting does.
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # Decimal point position: value = 0.<digits> * 10**point.
    point = len(digit_tuple) + exponent
    prefix = "-" if sign else ""
    exp10 = point - 1
    if exp10 < -4 or exp10 >= 6:  # Go: %e when exp < -4 || exp >= eprec (6 when shortest)
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{prefix}{digits}{'0' * (point - len(digits))}"
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def escape_label_value(value: str) -> str:
    if "\\" not in value and "\n" not in value and '"' not in value:
        return value
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def parse(text: str) -> dict[str, Family]:
    """Families by the name on their TYPE/HELP line, samples by the name on their line, in text order.

    prometheus_client's parser names a counter family without ``_total`` and appends ``_total`` to the
    samples of a counter whose TYPE name lacks it (OpenMetrics style); both are undone here, so names
    are the exposition's own, and its ``unknown`` type reads ``untyped`` as the text format calls it.
    """
    from prometheus_client.parser import text_string_to_metric_families  # host only, see the docstring

    counters = set(_COUNTER_TYPE.findall(text))
    try:
        parsed = list(text_string_to_metric_families(text))
    except ValueError as error:
        raise ExpositionError(_locate(text, error)) from None
    families: dict[str, Family] = {}
    for metric in parsed:
        name, strip = metric.name, False
        if metric.type == "counter":
            if metric.name + "_total" in counters:
                name = metric.name + "_total"
            else:
                strip = True  # the parser appended _total to every sample
        family = families.setdefault(name, Family(name))
        family.type = "untyped" if metric.type in ("unknown", "untyped") else metric.type
        family.help = metric.documentation or family.help
        for sample in metric.samples:
            sample_name = sample.name.removesuffix("_total") if strip else sample.name
            family.samples.append(Sample(sample_name, dict(sample.labels), float(sample.value)))
    return families


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """Every sample as (name, labels, value), in text order."""
    return [(s.name, s.labels, s.value) for family in parse(text).values() for s in family.samples]


def _locate(text: str, error: ValueError) -> str:
    """The first line the parser refuses on its own, for an error that names it."""
    from prometheus_client.parser import text_string_to_metric_families

    for number, line in enumerate(text.splitlines(), start=1):
        try:
            list(text_string_to_metric_families(line + "\n"))
        except ValueError:
            return f"line {number}: not a sample: {line[:120]}"
    return f"not exposition text: {error}"
