"""The house rules of lab/ (ARCHITECTURE.md), read from the source with ast: nothing imports upward,
one construct uses another only through its public module (lab.dcgm and lab.runai are used through theirs
from everywhere), the node images' code is stdlib-only, and no two modules share a name."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from lab.bringup.images import IMAGE_MODULES
from lab.paths import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "lab"
# Lowest first; a module may import only from its own layer or below. The command line is on top.
LAYERS = {
    "lab": 0,  # lab/__init__ and the foundation: paths, progress, versions, archives, promql, contract,
    # exposition, alert_receiver
    "lab.spec": 1,
    "lab.bringup": 2,
    "lab.slurm_exporter": 3,
    "lab.dcgm": 3,
    "lab.workload": 3,
    "lab.runai": 3,
    "lab.prometheus_ui": 3,
    "lab.capture": 4,
    "lab.churn": 4,
    "lab.drill": 4,
    "lab.alerts": 4,
    "lab.kube": 4,  # the Kubernetes path: composes lab.runai and lab.dcgm over a real cluster
    "lab.kinds": 5,
}
COMMAND_LINE = 6
# A construct's public module: all that any module outside the construct may import of it.
PUBLIC = {"lab.dcgm": "lab.dcgm.shim", "lab.runai": "lab.runai"}
REPEATABLE_NAMES = {"__init__.py", "__main__.py", "cli.py"}


def _module(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and ".".join(parts[:2]) in LAYERS else "lab"


def _layer(module: str) -> int:
    if module in ("lab.cli", "lab.__main__") or module.endswith((".cli", ".__main__")):
        return COMMAND_LINE
    return LAYERS[_package(module)]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a lab module, at any depth (function-level imports too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "lab":
                found += [(node.lineno, f"lab.{alias.name}") for alias in node.names]
            elif node.module.startswith("lab."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("lab.")]
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_package_has_sources() -> None:
    assert len(SOURCES) > 50, "an empty glob must not pass"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_nothing_imports_upward(path: Path) -> None:
    module = _module(path)
    for line, imported in _imports(path):
        if imported == "lab.__version__" or imported.startswith("lab.__"):
            continue
        assert _layer(imported) <= _layer(module), (
            f"{path.relative_to(PROJECT_ROOT)}:{line}: {module} (layer {_layer(module)}) imports "
            f"{imported} (layer {_layer(imported)})"
        )


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_constructs_use_each_other_through_their_public_module(path: Path) -> None:
    module = _module(path)
    if _layer(module) != 3:
        return
    for line, imported in _imports(path):
        target = _package(imported)
        if target != _package(module) and _layer(imported) == 3:
            assert imported == PUBLIC.get(target), (
                f"{path.relative_to(PROJECT_ROOT)}:{line}: {module} imports {imported}; "
                f"use {PUBLIC.get(target, 'a public module of ' + target)}"
            )


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_a_construct_with_a_public_module_is_used_only_through_it(path: Path) -> None:
    """Beyond the constructs' own layer: the Kubernetes path, the analyses, the kinds and the CLI too."""
    module = _module(path)
    for line, imported in _imports(path):
        target = _package(imported)
        if target in PUBLIC and target != _package(module):
            assert imported == PUBLIC[target], (
                f"{path.relative_to(PROJECT_ROOT)}:{line}: {module} imports {imported}; use {PUBLIC[target]}"
            )


def _closure(start: str, allowed_files: set[str]) -> tuple[set[str], set[str]]:
    """Module-level lab imports reachable from ``start`` and the non-lab modules they import."""
    seen: set[str] = set()
    outside: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = PROJECT_ROOT / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = PROJECT_ROOT / module.replace(".", "/") / "__init__.py"
        assert str(path.relative_to(PROJECT_ROOT)) in allowed_files, f"{module} is not in the image"
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("lab"):
                    names = [f"lab.{a.name}" for a in node.names if not a.name.startswith("__")]
                    todo += [node.module] if node.module != "lab" else names
                else:
                    outside.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                outside.update(a.name.split(".")[0] for a in node.names)
    return seen, outside


def test_the_node_image_runs_stdlib_only_code_it_carries() -> None:
    files = {f"lab/{m}" for m in ("__init__.py", *IMAGE_MODULES)}
    files |= {f"lab/dcgm/{p.name}" for p in (PACKAGE / "dcgm").glob("*.py")}
    _, outside = _closure("lab.dcgm.__main__", files)
    assert outside <= set(sys.stdlib_module_names) | {"__future__"}, outside - set(sys.stdlib_module_names)


@pytest.mark.parametrize("start", ["lab.kube.controlplane", "lab.kube.driver", "lab.kube.__main__"])
def test_the_runai_image_carries_what_its_processes_import(start: str) -> None:
    files = {f"lab/{m}" for m in ("__init__.py", *IMAGE_MODULES)}
    for package in ("dcgm", "kube", "runai", "spec"):
        files |= {f"lab/{package}/{p.name}" for p in (PACKAGE / package).glob("*.py")}
    _, outside = _closure(start, files)
    # Debian's python3 with python3-yaml, -pydantic and -typer only: no cryptography in the container.
    assert outside <= set(sys.stdlib_module_names) | {"__future__", "yaml", "pydantic", "typer"}, outside


def test_no_two_modules_share_a_name() -> None:
    by_name: dict[str, list[str]] = {}
    for path in SOURCES:
        if path.name not in REPEATABLE_NAMES:
            by_name.setdefault(path.name, []).append(str(path.relative_to(PROJECT_ROOT)))
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}
