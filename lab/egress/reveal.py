"""The real name behind a pseudonym: the keyed hash recomputed over a lab's names until one matches
(pure but for the time it takes: about 100 000 names a second).

Fixed names are tried first, then the names made at run time, workload numbers 1 … ``up_to`` of each
class. No match means a pseudonym made with another key (one rotated away), a value that is not one of
the lab's names, or a run-time name past the bound or with a random part (a Job's pod).
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.egress.names import EgressNames, Name
from lab.egress.pseudonyms import keyed


@dataclass(frozen=True)
class Search:
    """What a reveal found (None: nothing) and how many names it tried."""

    found: Name | None
    fixed_tried: int
    run_time_tried: int


def reveal(key: bytes, pseudonym: str, names: EgressNames, up_to: int) -> Search:
    """The name among ``names`` whose pseudonym under ``key`` is ``pseudonym`` (lower-case hex)."""
    of = keyed(key)
    for count, name in enumerate(names.fixed, start=1):
        if of(name.value) == pseudonym:
            return Search(name, count, 0)
    tried = 0
    for run_time in names.run_time:
        if run_time.candidates is None:
            continue
        for value in run_time.candidates(up_to):
            tried += 1
            if of(value) == pseudonym:
                return Search(Name(value, run_time.labels, (run_time.source,)), len(names.fixed), tried)
    return Search(None, len(names.fixed), tried)
