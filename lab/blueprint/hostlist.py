"""Slurm hostlist expressions: the ``dgx-[001-004,007]`` form Slurm uses in slurm.conf and sinfo.

Only the one-bracket form the lab writes is supported: ``prefix[ranges]suffix`` or a plain name.
"""

from __future__ import annotations

import re

_BRACKET = re.compile(r"^(?P<prefix>[^\[\]]*)\[(?P<ranges>[0-9,\-]+)\](?P<suffix>[^\[\]]*)$")


# No blueprint declares more nodes (nodes.count ≤ 1,024): a longer list names nodes that do not exist,
# and is refused before its names are built (dgx-[1-999999999] would fill memory first).
MAX_NAMES = 1024


class HostlistError(ValueError):
    """A hostlist expression the lab cannot read."""


def expand(expression: str) -> list[str]:
    """``dgx-[001-003]`` → ``['dgx-001', 'dgx-002', 'dgx-003']``; a plain name → ``[name]``.

    Comma-separated top-level items (``a,b-[1-2]``) are expanded in order.
    """
    names: list[str] = []
    for item in _split_top_level(expression):
        names.extend(_expand_one(item, MAX_NAMES - len(names)))
    return names


def compress(names: list[str]) -> str:
    """The inverse of :func:`expand` for names that share one prefix and zero-padded numbers.

    Names that do not fit the pattern are listed as they are, comma-separated.
    """
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        match = re.fullmatch(r"(?P<prefix>.*?)(?P<number>\d+)", name)
        if match is None:
            plain.append(name)
            continue
        number = match["number"]
        groups.setdefault((match["prefix"], len(number)), []).append(int(number))
    parts = list(plain)
    for (prefix, width), numbers in groups.items():
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}")
            continue
        parts.append(f"{prefix}[{_ranges(sorted(numbers), width)}]")
    return ",".join(parts)


def _ranges(numbers: list[int], width: int) -> str:
    spans: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        spans.append(f"{start:0{width}d}" if start == previous else f"{start:0{width}d}-{previous:0{width}d}")
        if number is not None:
            start = previous = number
    return ",".join(spans)


def _split_top_level(expression: str) -> list[str]:
    items, depth, current = [], 0, ""
    for char in expression:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    if depth != 0 or any(not item for item in items):
        raise HostlistError(f"unbalanced or empty hostlist expression {expression!r}")
    return items


def _expand_one(item: str, room: int) -> list[str]:
    if "[" not in item and "]" not in item:
        return [item]
    match = _BRACKET.match(item)
    if match is None:
        raise HostlistError(f"cannot read hostlist {item!r}: use the form prefix[001-004,007]")
    names: list[str] = []
    for span in match["ranges"].split(","):
        low, _, high = span.partition("-")
        if not low or (span.endswith("-")):
            raise HostlistError(f"bad range {span!r} in hostlist {item!r}")
        width = len(low)
        last = int(high) if high else int(low)
        if last < int(low):
            raise HostlistError(f"range {span!r} in hostlist {item!r} runs backwards")
        if last - int(low) + 1 > room - len(names):
            raise HostlistError(f"hostlist {item!r} names more than {MAX_NAMES} nodes, more than a lab has")
        names.extend(
            f"{match['prefix']}{number:0{width}d}{match['suffix']}" for number in range(int(low), last + 1)
        )
    return names
