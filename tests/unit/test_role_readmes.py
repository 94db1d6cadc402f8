"""Every Ansible role under ansible/roles/ has a README.md, and its Variables table names every variable
of the role's defaults/main.yml (the first column's backticked names; prose elsewhere does not count)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROLES_DIR = Path(__file__).resolve().parents[2] / "ansible" / "roles"
_HEADING = re.compile(r"^#{1,6}\s")
_NAME = re.compile(r"`([A-Za-z_]\w*)`")
_SEPARATOR_ROW = re.compile(r"^\|[\s:|-]+\|$")


def roles() -> list[Path]:
    return sorted(path for path in ROLES_DIR.iterdir() if path.is_dir()) if ROLES_DIR.is_dir() else []


def table_names(readme: str) -> set[str]:
    """The backticked names in the first column of the table under the `## Variables` heading."""
    names: set[str] = set()
    inside = False
    for line in readme.splitlines():
        if _HEADING.match(line):
            inside = line.strip() == "## Variables"
            continue
        row = line.strip()
        if not inside or not row.startswith("|") or _SEPARATOR_ROW.match(row):
            continue
        first_cell = re.split(r"(?<!\\)\|", row)[1]
        names.update(_NAME.findall(first_cell))
    return names


def default_names(role: Path) -> set[str]:
    defaults = role / "defaults" / "main.yml"
    if not defaults.is_file():
        return set()
    loaded = yaml.safe_load(defaults.read_text(encoding="utf-8")) or {}
    assert isinstance(loaded, dict), f"{defaults}: not a mapping of variables"
    return set(loaded)


def test_table_names_reads_only_the_variables_tables_first_column() -> None:
    readme = (
        "# role\n\nProse names `prose_only`.\n\n## Variables\n\n"
        "| name | default | meaning |\n|---|---|---|\n"
        "| `one` | `two` | `three` |\n| `four`, `five` | `a \\| b` | x |\n\n"
        "`after_table` in a note.\n\n## Example\n\n| `elsewhere` | x |\n"
    )
    assert table_names(readme) == {"one", "four", "five"}
    assert table_names("# role\n\n| `one` | x |\n") == set()


def test_every_role_has_a_readme() -> None:
    found = roles()
    assert found, f"no role directories in {ROLES_DIR}"
    missing = [role.name for role in found if not (role / "README.md").is_file()]
    assert not missing, f"roles without README.md: {missing}"


def test_every_readme_names_each_default_in_its_variables_table() -> None:
    found = roles()
    assert found, f"no role directories in {ROLES_DIR}"
    checked = 0
    omitted: dict[str, list[str]] = {}
    for role in found:
        defaults = default_names(role)
        checked += len(defaults)
        readme = role / "README.md"
        documented = table_names(readme.read_text(encoding="utf-8")) if readme.is_file() else set()
        if missing := sorted(defaults - documented):
            omitted[role.name] = missing
    assert checked, f"no role in {ROLES_DIR} defines a default: nothing was checked"
    assert not omitted, f"defaults missing from the README's Variables table: {omitted}"
