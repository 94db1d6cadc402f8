"""Docs-check: the prose does not point at files, `lab` commands or `just` recipes that do not exist.

For README.md, docs/*.md and the top-level ARCHITECTURE.md, BENCHMARKS.md and RELIABILITY.md (those
present): every relative markdown link resolves to a path in the repository; every ``lab COMMAND
[SUBCOMMAND]`` in a code block or a backticked span names a real command of ``lab.cli.app``; every
``just RECIPE`` there names a recipe of the Justfile. Every ``bench/...`` file that BENCHMARKS.md,
README.md or docs/*.md names exists, and BENCHMARKS.md's headings say what they measure, not an issue.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import typer.main

from lab.cli import app
from lab.paths import PROJECT_ROOT

TOP_LEVEL_DOCS = ("README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "RELIABILITY.md")
DOC_FILES = [
    path
    for path in [
        *(PROJECT_ROOT / name for name in TOP_LEVEL_DOCS),
        *sorted((PROJECT_ROOT / "docs").glob("*.md")),
    ]
    if path.is_file()
]
IDS = [path.relative_to(PROJECT_ROOT).as_posix() for path in DOC_FILES]

# A recipe line: a name, optional parameters, then ":" that is not ":=" (variables, settings).
# A plainer `[^:=]*` would miss recipes with defaults (`lab-up blueprint=default_blueprint:`).
_RECIPE = re.compile(r"^@?([a-z][a-z0-9_-]*)\b[^:]*:(?!=)")
_ALIAS = re.compile(r"^alias\s+([a-z][a-z0-9_-]*)\s*:=")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# The target of `[text](target)`, `[text](target "title")` or `![alt](target)`; matching from `](` also
# finds links whose text wraps onto the line before.
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^)]*[\"'])?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_WORD = re.compile(r"^[a-z][a-z0-9_-]*$")  # a command or recipe name; not an option or a PLACEHOLDER
_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")
# A file under bench/ as the prose names it (`python3 bench/bench_lab.py`, bench/blueprints/x.yaml): not
# part of a longer path, and ending on a word character so that a sentence's full stop is left out.
_BENCH_PATH = re.compile(r"(?<![\w./-])bench/[\w./-]*\w")
# The documents that name benchmarks and how to run them.
BENCH_DOCS = [
    path
    for path in [
        PROJECT_ROOT / "BENCHMARKS.md",
        PROJECT_ROOT / "README.md",
        *sorted((PROJECT_ROOT / "docs").glob("*.md")),
    ]
    if path.is_file()
]


def command_tree() -> dict[str, set[str]]:
    """Each top-level command of `lab` and the subcommands of the groups (empty for plain commands)."""
    root: Any = typer.main.get_command(app)
    return {name: set(getattr(command, "commands", {})) for name, command in root.commands.items()}


def justfile_recipes(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        if line.lstrip().startswith("#") or line[:1].isspace():
            continue  # comments and recipe bodies
        if match := _ALIAS.match(line) or _RECIPE.match(line):
            names.add(match.group(1))
    return names


RECIPES = justfile_recipes((PROJECT_ROOT / "Justfile").read_text(encoding="utf-8"))


def code_and_prose(text: str) -> Iterator[tuple[int, bool, str]]:
    """(line number, is code, line): fenced blocks and indented (≥ 4 spaces or a tab) lines are code."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if match := _FENCE.match(line):
            if fence is None:
                fence = match.group(1)
                yield number, True, ""
                continue
            if fence == match.group(1):
                fence = None
                yield number, True, ""
                continue
        yield number, fence is not None or line.startswith(("    ", "\t")), line


def commands(text: str) -> Iterator[tuple[int, str]]:
    """(line number, shell command) for each command in a code line or a backticked span."""
    for number, is_code, line in code_and_prose(text):
        pieces = [line.split(" # ", 1)[0]] if is_code else []
        pieces += [span[1] for span in _INLINE_CODE.findall(line)] if not is_code else []
        for piece in pieces:
            for command in _SEPARATORS.split(piece.strip().removeprefix("$ ")):
                yield number, command.strip()


def prose_without_code(text: str) -> Iterator[tuple[int, str]]:
    for number, is_code, line in code_and_prose(text):
        if not is_code:
            yield number, _INLINE_CODE.sub(lambda span: " " * len(span.group(0)), line)


def link_problems(doc: Path, text: str) -> list[str]:
    problems = []
    for number, line in prose_without_code(text):
        targets = [m.group(1) for m in _LINK.finditer(line)]
        targets += [m.group(1) for m in [_REFERENCE.match(line)] if m]
        for target in targets:
            if _SCHEME.match(target) or target.startswith("#"):
                continue  # http(s), mailto: and in-page anchors
            relative = unquote(target.split("#", 1)[0].split("?", 1)[0])
            base = PROJECT_ROOT if relative.startswith("/") else doc.parent
            resolved = (base / relative.lstrip("/")).resolve()
            where = f"{doc.relative_to(PROJECT_ROOT)}:{number}"
            if not resolved.is_relative_to(PROJECT_ROOT):
                problems.append(f"{where}: link ({target}) leaves the repository ({resolved})")
            elif not resolved.exists():
                problems.append(f"{where}: link ({target}) points to a missing file ({resolved})")
    return problems


def lab_command_problems(doc: Path, text: str, tree: dict[str, set[str]]) -> list[str]:
    problems = []
    for number, command in commands(text):
        words = command.split()
        if len(words) < 2 or words[0] != "lab" or not _WORD.match(words[1]):
            continue
        where = f"{doc.relative_to(PROJECT_ROOT)}:{number}: `{command}`"
        first = words[1]
        if first not in tree:
            problems.append(
                f"{where}: `lab {first}` is no lab command (there are: {', '.join(sorted(tree))})"
            )
        elif tree[first] and len(words) > 2 and _WORD.match(words[2]) and words[2] not in tree[first]:
            known = ", ".join(sorted(tree[first]))
            problems.append(f"{where}: `lab {first} {words[2]}` is no subcommand (there are: {known})")
    return problems


def just_recipe_problems(doc: Path, text: str, recipes: set[str]) -> list[str]:
    problems = []
    for number, command in commands(text):
        words = command.split()
        if len(words) < 2 or words[0] != "just" or not _WORD.match(words[1]):
            continue
        if words[1] not in recipes:
            problems.append(
                f"{doc.relative_to(PROJECT_ROOT)}:{number}: `{command}`: `just {words[1]}` is no Justfile "
                f"recipe (there are: {', '.join(sorted(recipes))})"
            )
    return problems


@pytest.mark.parametrize("doc", DOC_FILES, ids=IDS)
def test_relative_links_point_to_files_in_the_repository(doc: Path) -> None:
    problems = link_problems(doc, doc.read_text(encoding="utf-8"))
    assert not problems, "broken links:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOC_FILES, ids=IDS)
def test_lab_commands_in_code_name_real_commands(doc: Path) -> None:
    problems = lab_command_problems(doc, doc.read_text(encoding="utf-8"), command_tree())
    assert not problems, "unknown lab commands:\n" + "\n".join(problems)


@pytest.mark.parametrize("doc", DOC_FILES, ids=IDS)
def test_just_recipes_in_code_name_real_recipes(doc: Path) -> None:
    problems = just_recipe_problems(doc, doc.read_text(encoding="utf-8"), RECIPES)
    assert not problems, "unknown just recipes:\n" + "\n".join(problems)


def test_the_readme_is_checked() -> None:
    assert "README.md" in IDS


def test_the_checker_itself_finds_what_it_should() -> None:
    doc = PROJECT_ROOT / "docs" / "probe.md"  # only named: the text is given
    text = (
        "See [the readme](../README.md), [a ghost](ghost.md#part), [web](https://example.org), [up](#top).\n"
        "Run `lab nosuch --x`, `lab workload plan`, `lab workload nosuch`, `lab COMMAND --help`,\n"
        "`lab --help`.\n"
        "\n"
        "    lab up --blueprint x.yaml && just nosuch   # a comment with lab bogus\n"
        "    just unit -k doctor\n"
    )
    links = link_problems(doc, text)
    assert len(links) == 1 and links[0].startswith("docs/probe.md:1: link (ghost.md#part)")
    lab = lab_command_problems(doc, text, {"up": set(), "workload": {"plan", "run"}})
    assert len(lab) == 2 and "`lab nosuch`" in lab[0] and "`lab workload nosuch`" in lab[1]
    just = just_recipe_problems(doc, text, {"unit"})
    assert len(just) == 1 and ":5:" in just[0] and "`just nosuch`" in just[0]


def bench_paths(text: str) -> Iterator[tuple[int, str]]:
    """(line number, path) for each ``bench/...`` file the text names, in prose or code."""
    for number, line in enumerate(text.splitlines(), start=1):
        for path in _BENCH_PATH.findall(line):
            yield number, path


def test_every_bench_file_the_docs_name_exists() -> None:
    named = [
        (doc, number, path)
        for doc in BENCH_DOCS
        for number, path in bench_paths(doc.read_text(encoding="utf-8"))
    ]
    assert named, (
        "no bench/ file named in BENCHMARKS.md, README.md or docs/*.md: the pattern no longer matches"
    )
    missing = [
        f"{doc.relative_to(PROJECT_ROOT)}:{number}: {path}"
        for doc, number, path in named
        if not (PROJECT_ROOT / path).is_file()
    ]
    assert not missing, "bench files named but not in the repository:\n" + "\n".join(missing)


def test_the_bench_path_pattern_finds_what_it_should() -> None:
    text = (
        "Run `python3 bench/bench_lab.py up` on bench/blueprints/runai-scale.yaml.\n"
        "Results in `bench/`; not tests/bench/x.py nor mybench/y.py.\n"
    )
    assert list(bench_paths(text)) == [(1, "bench/bench_lab.py"), (1, "bench/blueprints/runai-scale.yaml")]


def test_benchmarks_headings_name_what_is_measured_not_an_issue() -> None:
    text = (PROJECT_ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    headings = [line for _, is_code, line in code_and_prose(text) if not is_code and line.startswith("#")]
    assert headings, "BENCHMARKS.md has no headings"
    naming_issues = [heading for heading in headings if "issue" in heading.lower()]
    assert not naming_issues, "headings naming an issue, not what they measure:\n" + "\n".join(naming_issues)


def test_justfile_parser_agrees_with_just() -> None:
    just = shutil.which("just")
    if just is None:
        pytest.skip("`just` is not on PATH (pip install -e '.[dev]' installs it)")
    listed = subprocess.run(
        [just, "--summary", "--justfile", str(PROJECT_ROOT / "Justfile")],
        capture_output=True,
        text=True,
        check=True,
        cwd=PROJECT_ROOT,
    ).stdout.split()
    assert set(listed) <= RECIPES, f"recipes the regex misses: {set(listed) - RECIPES}"
