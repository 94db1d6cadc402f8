"""The house rules of lab/ (ARCHITECTURE.md), read from the source with ast: nothing imports upward,
one construct uses another only through its public module (lab.dcgm and lab.runai are used through theirs
from everywhere), the node images' code is stdlib-only, and no two modules share a name."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from lab.bringup.images import IMAGE_MODULES, IMAGE_PACKAGES
from lab.paths import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "lab"
# Lowest first; a module may import only from its own layer or below. The command line is on top.
LAYERS = {
    "lab": 0,  # lab/__init__ and the foundation: paths, progress, versions, archives, promql, contract,
    # exposition, alert_receiver
    "lab.blueprint": 1,
    "lab.bringup": 2,
    "lab.attach": 3,  # a running lab as every later command reaches it
    "lab.slurm_exporter": 4,
    "lab.dcgm": 4,
    "lab.workload": 4,
    "lab.runai": 4,
    "lab.prometheus_ui": 4,
    "lab.egress": 4,  # across the fence: pseudonyms, the egress key, the names a lab pseudonymises
    "lab.capture": 5,
    "lab.churn": 5,
    "lab.drill": 5,
    "lab.alerts": 5,
    "lab.kube": 5,  # the Kubernetes path in the Run:ai container: composes lab.runai and lab.dcgm
    "lab.kube_host": 5,  # what the host makes for it: binaries, certificates
    "lab.central": 5,  # the site's centre beyond the fence, on the host: its stores' and gateway's builds
    "lab.kinds": 6,
    "lab.commands": 7,  # the command line: one module per command group, mounted by lab.cli
}
CONSTRUCTS = 4
COMMAND_LINE = 7
# The `lab` command itself, and the entry points of the containers' own processes (the DCGM shim in the
# node image, the Kubernetes path in the Run:ai container): nothing imports them but their launcher.
ENTRY_POINTS = {"lab.cli", "lab.__main__", "lab.dcgm.cli", "lab.dcgm.__main__", "lab.kube.__main__"}
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
    if module in ENTRY_POINTS:
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
    if _layer(module) != CONSTRUCTS:
        return
    for line, imported in _imports(path):
        target = _package(imported)
        if target != _package(module) and _layer(imported) == CONSTRUCTS:
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
    for package in IMAGE_PACKAGES["runai"]:
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


def _is_module(name: str) -> bool:
    path = PROJECT_ROOT / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _module_graph() -> dict[str, set[str]]:
    """Module → the lab modules it imports (``from lab.x import y`` is lab.x.y where y is a module)."""
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        targets = graph.setdefault(_module(path), set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "lab" or node.module.startswith("lab."):
                    for alias in node.names:
                        inner = f"{node.module}.{alias.name}"
                        targets.add(inner if _is_module(inner) else node.module)
            elif isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.startswith("lab."))
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    advanced = True
                    break
                if target in stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_round_a_circle() -> None:
    """Function-level imports count: a circle hidden inside a function is a circle still."""
    graph = _module_graph()
    assert len(graph) == len(SOURCES)
    assert _cycles(graph) == []


def test_the_runai_image_carries_all_of_lab_kube_and_nothing_of_the_host_side() -> None:
    """lab.kube runs in the container (every module of it within the image's imports); lab.kube_host runs
    on the host and is not carried."""
    carried = IMAGE_PACKAGES["runai"]
    assert "kube" in carried and "kube_host" not in carried
    files = {f"lab/{m}" for m in ("__init__.py", *IMAGE_MODULES)}
    for package in carried:
        files |= {f"lab/{package}/{p.name}" for p in (PACKAGE / package).glob("*.py")}
    for path in sorted((PACKAGE / "kube").glob("*.py")):
        _, outside = _closure(_module(path), files)
        assert outside <= set(sys.stdlib_module_names) | {"__future__", "yaml", "pydantic", "typer"}, path
