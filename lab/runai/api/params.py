"""Query parameters of the lab's Run:ai API, parsed and checked (pure).

Arrays are ``explode: false`` in the reference (``metricType=TOTAL_GPU,ALLOCATED_GPU``); a repeated
parameter is read the same way. Every mistake is an :class:`ApiError` 400 whose message names the
parameter and the values it takes; its body is the reference's ``Error`` schema.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lab.runai.api import reference

Query = Mapping[str, Sequence[str]]


class ApiError(Exception):
    """An error answer: HTTP status and the reference's ``Error`` body ``{code, message, details}``."""

    def __init__(self, code: int, message: str, details: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def body(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "details": self.details}


def bad_request(message: str, details: str = "") -> ApiError:
    return ApiError(400, message, details)


NOT_EMULATED = "the lab does not compute it (cantfind.md, Run:ai API)"


@dataclass(frozen=True)
class TimeRange:
    start: float
    end: float
    samples: int


def single(query: Query, name: str) -> str | None:
    values = query.get(name, ())
    if len(values) > 1:
        raise bad_request(f"{name} is given {len(values)} times; give it once")
    return values[0] if values else None


def listed(query: Query, name: str) -> list[str]:
    return [item for value in query.get(name, ()) for item in value.split(",") if item]


def iso_time(text: str, name: str) -> float:
    """An ISO 8601 date-time (``2026-12-05T10:00:00Z``) as unix seconds; it must name its offset."""
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise bad_request(
            f"{name}={text!r} is not an ISO 8601 date-time", "e.g. 2026-12-05T10:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise bad_request(f"{name}={text!r} has no time zone", "end it in Z or +00:00")
    return parsed.timestamp()


def iso(at: float) -> str:
    """Unix seconds as the reference's date-time (RFC 3339, UTC, milliseconds)."""
    moment = datetime.datetime.fromtimestamp(at, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def integer(query: Query, name: str, default: int, low: int, high: int) -> int:
    text = single(query, name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise bad_request(f"{name}={text!r} is not an integer") from None
    if not low <= value <= high:
        raise bad_request(f"{name}={value} is out of range", f"{name} takes {low} to {high}")
    return value


def time_range(query: Query) -> TimeRange:
    """``start`` and ``end`` (both required), ``numberOfSamples`` (0 to 1000, default 20)."""
    found = {name: single(query, name) for name in ("start", "end")}
    missing = [name for name, value in found.items() if value is None]
    if missing:
        raise bad_request(f"missing required parameter {' and '.join(missing)}", "ISO 8601 date-times")
    start = iso_time(found["start"] or "", "start")
    end = iso_time(found["end"] or "", "end")
    if start > end:
        raise bad_request(f"start {found['start']} is after end {found['end']}", "give start <= end")
    samples = integer(
        query, "numberOfSamples", reference.SAMPLES_DEFAULT, reference.SAMPLES_MIN, reference.SAMPLES_MAX
    )
    return TimeRange(start, end, samples)


def _check(name: str, value: str, documented: Sequence[str], served: Sequence[str]) -> str:
    if value not in documented:
        raise bad_request(f"{name} {value!r} is not one of the reference's values", ", ".join(documented))
    if value not in served:
        raise bad_request(f"{name} {value!r}: {NOT_EMULATED}", "served: " + ", ".join(served))
    return value


def metric_types(query: Query, documented: Sequence[str], served: Sequence[str]) -> list[str]:
    """``metricType`` (required, one or more)."""
    values = listed(query, "metricType")
    if not values:
        raise bad_request("missing required parameter metricType", ", ".join(served))
    return [_check("metricType", v, documented, served) for v in dict.fromkeys(values)]


def telemetry_type(query: Query, documented: Sequence[str], served: Sequence[str]) -> str:
    """``telemetryType`` (required, one)."""
    value = single(query, "telemetryType")
    if value is None:
        raise bad_request("missing required parameter telemetryType", ", ".join(served))
    return _check("telemetryType", value, documented, served)


def group_by(query: Query, documented: Sequence[str]) -> list[str]:
    """``groupBy``: at most two of the endpoint's fields."""
    values = list(dict.fromkeys(listed(query, "groupBy")))
    if len(values) > reference.GROUP_BY_MAX_ITEMS:
        raise bad_request(f"groupBy has {len(values)} fields", "at most 2 (the reference's maxItems)")
    for value in values:
        _check("groupBy", value, documented, documented)
    return values


def choice(query: Query, name: str, documented: Sequence[str], served: Sequence[str]) -> str | None:
    value = single(query, name)
    return None if value is None else _check(name, value, documented, served)


def boolean(query: Query, name: str) -> bool | None:
    value = single(query, name)
    if value is None:
        return None
    if value not in ("true", "false"):
        raise bad_request(f"{name}={value!r} is not a boolean", "true or false")
    return value == "true"


@dataclass(frozen=True)
class Filter:
    """One ``filterBy`` term: field, operator, value (``allocatedGPU>=2``)."""

    field: str
    operator: str
    value: str


def filters(query: Query, fields: Sequence[str]) -> list[Filter]:
    """``filterBy`` terms in the reference's ``field-name operator value`` form."""
    terms = []
    for text in listed(query, "filterBy"):
        found = None
        for field in sorted(fields, key=len, reverse=True):
            rest = text[len(field) :]
            if text.startswith(field):
                operator = next((op for op in reference.FILTER_OPERATORS if rest.startswith(op)), None)
                if operator is not None and rest[len(operator) :]:
                    found = Filter(field, operator, rest[len(operator) :])
                    break
        if found is None:
            raise bad_request(
                f"filterBy {text!r} is not 'field operator value'",
                f"fields: {', '.join(fields)}; operators: {' '.join(reference.FILTER_OPERATORS)}",
            )
        terms.append(found)
    return terms
