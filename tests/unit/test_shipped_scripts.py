"""The scripts that the images and roles install outside the lab package. The Python ones (no .py
suffix) import the standard library only: they run with Debian's python3, most as ``python3 -IS``, on
nodes that carry no third-party package. Every tracked script is under `just static`: ruff through
[tool.ruff] extend-include, strict mypy through `just typecheck-scripts`, and the shell ones through
`just shellcheck`. A script added to git and not to those lists fails here.
"""

from __future__ import annotations

import ast
import fnmatch
import shlex
import sys
import tomllib
from collections.abc import Callable
from functools import cache
from pathlib import PurePosixPath

import pytest

from lab.paths import PROJECT_ROOT
from tests.unit.test_hygiene import tracked

# Gone from the standard library by Python 3.13, the python3 of Debian trixie's images, but still in
# sys.stdlib_module_names when the tests run on an older Python.
REMOVED_BY_3_13 = {
    *("asynchat", "asyncore", "distutils", "imp", "smtpd"),  # 3.12
    *("aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "lib2to3", "mailcap", "msilib"),
    *("nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib"),
}
NODE_STDLIB = set(sys.stdlib_module_names) - REMOVED_BY_3_13


@cache  # every test asks of every tracked file: read each shebang once
def interpreter(name: str) -> str:
    """The interpreter a tracked file's shebang names ("python3", "sh", "bash"), or "" for none.
    A symlink is not a script of its own (epilog/dcgm-job-mapping is the prolog)."""
    path = PROJECT_ROOT / name
    if path.is_symlink() or not path.is_file():
        return ""
    with path.open("rb") as handle:
        first = handle.readline()
    if not first.startswith(b"#!"):
        return ""
    words = first[2:].decode(errors="replace").split()
    if words and PurePosixPath(words[0]).name == "env":
        words = words[1:]
    return PurePosixPath(words[0]).name if words else ""


def python_scripts() -> list[str]:
    return sorted(n for n in tracked() if not n.endswith(".py") and interpreter(n).startswith("python"))


def shell_scripts() -> list[str]:
    return sorted(n for n in tracked() if interpreter(n) in {"sh", "bash"})


def recipe(name: str) -> tuple[list[str], list[str]]:
    """A Justfile recipe's dependencies and the words of its body (continuation lines joined)."""
    lines = (PROJECT_ROOT / "Justfile").read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(f"{name}:")]
    assert len(starts) == 1, f"the Justfile has {len(starts)} recipes named {name!r}"
    body = []
    for line in lines[starts[0] + 1 :]:
        if not line.startswith((" ", "\t")):
            break
        body.append(line.strip())
    return lines[starts[0]].partition(":")[2].split(), shlex.split("\n".join(body).replace("\\\n", " "))


def test_the_scripts_are_found() -> None:
    assert "prolog/dcgm-job-mapping" in python_scripts()
    assert "epilog/dcgm-job-mapping" not in python_scripts(), "a symlink is checked as its target"
    assert "containers/base/lab-daemon" in shell_scripts()


def test_the_python_scripts_import_the_standard_library_only() -> None:
    outside = []
    for name in python_scripts():
        # Every import, a function's too: any of them runs on the node.
        for node in ast.walk(ast.parse((PROJECT_ROOT / name).read_text(encoding="utf-8"), name)):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            outside += [f"{name}:{node.lineno}: {m}" for m in modules if m.split(".")[0] not in NODE_STDLIB]
    assert not outside, "shipped scripts import outside the standard library:\n" + "\n".join(outside)


def test_ruff_checks_and_formats_every_python_script() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["ruff"].get("extend-include", [])
    missing = [n for n in python_scripts() if not any(fnmatch.fnmatch(n, p) for p in patterns)]
    assert not missing, f"add to [tool.ruff] extend-include in pyproject.toml: {missing}"
    stale = [p for p in patterns if not any(fnmatch.fnmatch(n, p) for n in tracked())]
    assert not stale, f"[tool.ruff] extend-include names no tracked file: {stale}"


@pytest.mark.parametrize(
    ("recipe_name", "program", "scripts"),
    [("typecheck-scripts", "mypy", python_scripts), ("shellcheck", "shellcheck", shell_scripts)],
    ids=["mypy", "shellcheck"],
)
def test_the_recipe_checks_every_script_of_its_language(
    recipe_name: str, program: str, scripts: Callable[[], list[str]]
) -> None:
    _, words = recipe(recipe_name)
    assert words[0] == program, words
    if program == "mypy":
        assert "--strict" in words, words
    paths = [w for w in words[1:] if not w.startswith("-")]
    missing = sorted(set(scripts()) - set(paths))
    assert not missing, f"add to the Justfile's {recipe_name}: {missing}"
    assert not sorted(set(paths) - set(tracked())), f"{recipe_name} names an untracked file"


def test_just_static_runs_the_script_checks() -> None:
    dependencies, _ = recipe("static")
    for check in ("fmt-check", "lint", "typecheck-scripts", "shellcheck"):
        assert check in dependencies, f"`just static` does not run {check}"
