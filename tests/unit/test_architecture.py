"""ARCHITECTURE.md's module map stays true: every package of lab/ has its table, each table lists exactly
the package's modules, the layer table names exactly the packages the layer test knows, and every
``lab/…`` path the map names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.paths import PROJECT_ROOT
from tests.unit.test_layers import LAYERS

ARCHITECTURE = PROJECT_ROOT / "ARCHITECTURE.md"
PACKAGE = PROJECT_ROOT / "lab"
_SECTION = re.compile(r"^\*\*`(lab/[a-z_/]*)`")  # **`lab/dcgm/`** … opens a package's table
_ROW = re.compile(r"^\|\s*(`[^|]+`)\s*\|")  # | `module.py`, `other.py` | job |
_TICKED = re.compile(r"`([^`]+)`")
_PATH = re.compile(r"`(lab/[A-Za-z0-9_./{},-]+)`")


def module_tables(text: str) -> dict[str, set[str]]:
    """Package directory (``lab/dcgm/``, ``lab/`` for the foundation) → the module files its table lists."""
    tables: dict[str, set[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if match := _SECTION.match(line):
            current = match.group(1)
            tables[current] = set()
        elif current is not None and (row := _ROW.match(line)):
            tables[current] |= {name for name in _TICKED.findall(row.group(1)) if name.endswith(".py")}
    return tables


def layer_packages(text: str) -> set[str]:
    """The packages the layer table names (``lab.dcgm``), its foundation row aside."""
    start = text.index("| layer | packages |")
    rows = text[start:].split("\n\n", 1)[0].splitlines()[2:]
    found = set()
    for row in rows:
        cells = row.split("|")
        found |= {f"lab.{name}" for name in re.findall(r"`lab/([a-z_]+)/`", cells[2])}
    return found


TEXT = ARCHITECTURE.read_text(encoding="utf-8")
TABLES = module_tables(TEXT)
# Every directory of lab/ that holds modules: a package without an __init__.py (a namespace package) is
# a package still, and looking for __init__.py files alone would leave it out of the map.
PACKAGES = sorted(
    {path.parent for path in PACKAGE.rglob("*.py")} | {PACKAGE},
    key=lambda path: str(path),
)


def test_the_map_has_tables() -> None:
    assert len(TABLES) > 10, "an empty parse must not pass"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda path: str(path.relative_to(PROJECT_ROOT)))
def test_each_package_has_a_table_listing_exactly_its_modules(package: Path) -> None:
    key = f"{package.relative_to(PROJECT_ROOT).as_posix()}/"
    assert key in TABLES, f"ARCHITECTURE.md has no **`{key}`** table"
    modules = {path.name for path in package.glob("*.py")}
    if key != "lab/":
        modules.discard("__init__.py")  # a package's __init__ holds its docstring only, unless listed
        listed = TABLES[key] - {"__init__.py"}
    else:
        listed = TABLES[key]
    assert sorted(listed - modules) == [], f"{key}: listed in ARCHITECTURE.md but not in the package"
    assert sorted(modules - listed) == [], f"{key}: in the package but not listed in ARCHITECTURE.md"


def test_the_layer_table_names_the_packages_the_layer_test_knows() -> None:
    assert layer_packages(TEXT) == set(LAYERS) - {"lab"}


def test_every_lab_path_the_map_names_exists() -> None:
    missing = []
    for path in _PATH.findall(TEXT):
        if "{" in path or "*" in path:
            continue  # a pattern, e.g. lab/{paths,versions}.py
        if not (PROJECT_ROOT / path).exists():
            missing.append(path)
    assert missing == []


def test_the_parsers_find_what_they_should() -> None:
    text = "**`lab/x/`**\n\n| module | job |\n|---|---|\n| `a.py`, `b.py` | one |\n| `c.py` | two |\n"
    assert module_tables(text) == {"lab/x/": {"a.py", "b.py", "c.py"}}
    layers = "| layer | packages | what |\n|---|---|---|\n| 1 x | `lab/x/`, `lab/y/` | it |\n\nafter"
    assert layer_packages(layers) == {"lab.x", "lab.y"}
