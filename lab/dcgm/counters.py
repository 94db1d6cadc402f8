"""The metric set as data: dcgm-exporter's collectors CSV (``-f/--collectors``).

Parses the format upstream reads (``etc/default-counters.csv``): ``#`` at the start of a line is a
comment, blank lines are skipped, each record is ``DCGM FIELD, Prometheus metric type, help message``
with spaces trimmed from every column. A real line::

    DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).

Type ``label`` makes the field a label on every series instead of a family of its own
(``DCGM_FI_DRIVER_VERSION``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lab.dcgm.field_ids import FIELD_IDS

DEFAULT_COUNTERS_PATH = Path(__file__).with_name("default-counters.csv")
# Opt-in profile: the default set plus the tag's commented-out violation counters (-f selects it).
THROTTLE_COUNTERS_PATH = Path(__file__).with_name("throttle-counters.csv")

# Prometheus types the shim renders; "label" is dcgm-exporter's own type for label fields.
PROM_TYPES = ("gauge", "counter", "label")


@dataclass(frozen=True, slots=True)
class Counter:
    """One CSV row: upstream ``counters.Counter`` (``FieldID, FieldName, PromType, Help``), its id
    looked up by name as the tag does (:mod:`lab.dcgm.field_ids`)."""

    field_name: str
    prom_type: str
    help: str

    @property
    def field_id(self) -> int:
        return FIELD_IDS[self.field_name]

    @property
    def is_label(self) -> bool:
        return self.prom_type == "label"

    def sort_key(self) -> tuple[int, str, str, str]:
        """Go's fmtsort order of the struct: field by field, FieldID first."""
        return (self.field_id, self.field_name, self.prom_type, self.help)


class CountersError(ValueError):
    """A collectors CSV the shim cannot serve; the message names file, line and fix."""


def parse_counters(text: str, *, source: str, supported_fields: Iterable[str] | None = None) -> list[Counter]:
    """Parse collectors CSV text; ``supported_fields`` limits rows to fields the shim emulates."""
    supported = None if supported_fields is None else frozenset(supported_fields)
    counters: list[Counter] = []
    seen: set[str] = set()
    for line_number, line in enumerate(text.splitlines(), start=1):
        # Go's encoding/csv with Comment='#': only a '#' in the first column starts a comment.
        if not line.strip() or line.startswith("#"):
            continue
        record = [column.strip(" ") for column in next(csv.reader([line]))]
        where = f"{source}:{line_number}"
        if len(record) != 3:
            raise CountersError(
                f"{where}: expected 3 columns (DCGM field, Prometheus type, help), got "
                f"{len(record)}: {line!r}; a help text must not contain commas"
            )
        field_name, prom_type, help_text = record
        if prom_type not in PROM_TYPES:
            raise CountersError(
                f"{where}: Prometheus type {prom_type!r} of {field_name} is not one of "
                f"{', '.join(PROM_TYPES)}; fix the second column"
            )
        if supported is not None and field_name not in supported:
            raise CountersError(
                f"{where}: field {field_name} is not emulated by the DCGM shim; comment the "
                f"line out with '#' or use one of: {', '.join(sorted(supported))}"
            )
        if field_name not in FIELD_IDS:
            raise CountersError(
                f"{where}: field {field_name} has no DCGM field id known to the shim; use one of: "
                f"{', '.join(sorted(FIELD_IDS))}"
            )
        if field_name in seen:
            raise CountersError(f"{where}: field {field_name} is listed twice; remove one line")
        seen.add(field_name)
        counters.append(Counter(field_name, prom_type, help_text))
    if not counters:
        raise CountersError(f"{source}: no counters; the file has only comments or blank lines")
    return counters


def load_counters(
    path: Path | None = None, *, supported_fields: Iterable[str] | None = None
) -> list[Counter]:
    """Read a collectors CSV; ``None`` reads the packaged 4.5.3-4.8.2 default set."""
    csv_path = DEFAULT_COUNTERS_PATH if path is None else path
    try:
        text = csv_path.read_text(encoding="utf-8")
    except OSError as error:
        raise CountersError(
            f"{csv_path}: cannot read collectors file ({error.strerror}); "
            "pass an existing file with -f/--collectors or DCGM_EXPORTER_COLLECTORS"
        ) from error
    return parse_counters(text, source=str(csv_path), supported_fields=supported_fields)


def metric_families(counters: Sequence[Counter]) -> list[Counter]:
    """Counters rendered as families of their own (everything except label fields)."""
    return [counter for counter in counters if not counter.is_label]
