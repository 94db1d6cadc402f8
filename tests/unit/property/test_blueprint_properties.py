"""Property: the blueprint loaders either return a usable blueprint or raise their own error type, whose
message names the file and, for a schema problem, every field at fault; never any other exception.

lab/blueprint/slurm_blueprint.py and lab/blueprint/runai_blueprint.py promise that "every failure is a
BlueprintError naming the fix", so that `lab up` never shows a traceback for a typo. The inputs are
arbitrary YAML values, one-field mutations of the shipped blueprints, and arbitrary file contents.

The properties found four kinds of input that once broke that promise: a file that is not UTF-8, an
impossible date (``2025-02-30``), YAML nested a few hundred levels deep, and a hostlist range one typo
away from a billion names. lab/blueprint/strict.py read_mapping and lab/blueprint/hostlist.py now turn
each into the loader's error; the regression tests at the end keep those inputs, and the properties above
generate them again.
"""

from __future__ import annotations

import copy
import datetime
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lab.blueprint import runai_blueprint, slurm_blueprint
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT

PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

Path_ = tuple[str | int, ...]


def shipped(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((BLUEPRINTS_DIR / name).read_text(encoding="utf-8"))
    return data


SLURM_BLUEPRINTS = {name: shipped(name) for name in ("default.yaml", "superpod.yaml")}
RUNAI_BLUEPRINT = shipped("runai.yaml")


def paths_of(data: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every key or index path below the root of a YAML document."""
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else []
    for key, value in items:
        yield (*prefix, key)
        yield from paths_of(value, (*prefix, key))


def dict_paths(data: Any) -> list[Path_]:
    return [(), *(path for path in paths_of(data) if isinstance(get(data, path), dict))]


def get(data: Any, path: Path_) -> Any:
    for part in path:
        data = data[part]
    return data


def field_name(path: Path_) -> str:
    """A path as :func:`lab.blueprint.strict.explain` names a field."""
    return ".".join(str(part) for part in path) or "(top level)"


FIELD_NAMES = sorted(
    {str(path[-1]) for data in [*SLURM_BLUEPRINTS.values(), RUNAI_BLUEPRINT] for path in paths_of(data)}
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-2, max_value=70000)  # near the schema's bounds (ports, uids, counts)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(["ALL", "now", "dgx-001", "dgx-[001-004]", "14-00:00:00", "slurm", "runai", ""])
)
KEYS = st.sampled_from(FIELD_NAMES) | st.text(max_size=12) | st.integers() | st.booleans() | st.none()
YAML_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=20,
)
UNKNOWN_KEY = st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True)


def outcome(load: Callable[[Path], Any], error: type[Exception], path: Path) -> Any:
    """The model, or the error message; any other exception propagates and fails the property."""
    try:
        return load(path)
    except error as raised:
        return str(raised)


def check_message(message: str, path: Path, what: str) -> list[str]:
    """The message starts with the file; a schema error lists each problem as ``  - field: reason``.

    Returns the fields it names (empty for a file that is not a YAML mapping at all).
    """
    assert message.startswith(f"{path}: "), message
    first, *rest = message.split("\n")
    counted = re.fullmatch(rf"{re.escape(str(path))}: (\d+) problem\(s\) in the {re.escape(what)}:", first)
    if counted is None:
        assert re.match(
            rf"{re.escape(str(path))}: (cannot read|not valid YAML|a {re.escape(what)} is)", first
        )
        return []
    problems = [line for line in rest if line.startswith("  - ")]
    assert len(problems) == int(counted[1]) >= 1, message
    return [line[4:].partition(": ")[0] for line in problems]


def related(field: str, mutated: str) -> bool:
    """A problem at the mutated field, inside it, or at a model that holds it (cross-field checks)."""
    return (
        field == "(top level)"
        or field == mutated
        or mutated.startswith(f"{field}.")
        or (field.startswith(f"{mutated}."))
    )


def check_slurm_model(model: slurm_blueprint.Blueprint) -> None:
    """A returned blueprint is usable: what bring-up derives from it works, and it round-trips."""
    assert len(set(model.nodes.names)) == model.nodes.count
    for partition in model.partitions:
        assert set(model.partition_nodes(partition)) <= set(model.nodes.names)
    assert set(model.drained_nodes) <= set(model.nodes.names)
    assert sorted(n for nodes in model.nodes_by_container.values() for n in nodes) == sorted(
        model.nodes.names
    )
    assert len({user.uid for user in model.all_users}) == len(model.all_users)
    dumped = model.model_dump()
    assert slurm_blueprint.parse(copy.deepcopy(dumped)).model_dump() == dumped


def write(directory: str, content: bytes | str | Any, name: str = "blueprint.yaml") -> Path:
    path = Path(directory) / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(content), encoding="utf-8")
    return path


@PROPERTY
@given(value=YAML_VALUES)
@example(value={"name": "x", "slurm": {"cluster_name": "c"}, 7: None})
@example(value={"\n  - ": None})  # a key with a line break stays one problem line
def test_any_yaml_value_gives_a_blueprint_or_names_the_file(value: Any) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, value)
        result = outcome(slurm_blueprint.load, slurm_blueprint.BlueprintError, path)
        if isinstance(result, slurm_blueprint.Blueprint):
            check_slurm_model(result)
        else:
            check_message(result, path, "blueprint")
        result = outcome(runai_blueprint.load, runai_blueprint.RunaiBlueprintError, path)
        assert not isinstance(result, runai_blueprint.RunaiBlueprint)  # `kind: runai` is required
        check_message(result, path, "Run:ai blueprint")


@st.composite
def mutations(draw: st.DrawFn, base: dict[str, Any]) -> tuple[dict[str, Any], str, Path_, Any]:
    """(mutated copy, operation, path, value): one field replaced, one field deleted, or a key added."""
    data = copy.deepcopy(base)
    operation = draw(st.sampled_from(["replace", "delete", "add"]))
    if operation == "add":
        path = draw(st.sampled_from(dict_paths(data)))
        container = get(data, path)
        key = draw(UNKNOWN_KEY.filter(lambda k: k not in container))
        value = draw(YAML_VALUES)
        container[key] = value
        return data, operation, (*path, key), value
    path = draw(st.sampled_from(list(paths_of(data))))
    parent, last = get(data, path[:-1]), path[-1]
    if operation == "delete":
        del parent[last]
        return data, operation, path, None
    value = draw(YAML_VALUES)
    parent[last] = value
    return data, operation, path, value


def check_mutation(
    result: Any, path: Path, what: str, operation: str, mutated: Path_, free_form: bool = False
) -> None:
    fields = check_message(result, path, what)
    assert any(related(field, field_name(mutated)) for field in fields), (field_name(mutated), result)
    if operation == "add" and not free_form:  # every model forbids unknown fields
        assert f"  - {field_name(mutated)}: unknown field (check the spelling against " in result


@PROPERTY
@given(data=st.data(), name=st.sampled_from(sorted(SLURM_BLUEPRINTS)))
def test_one_mutation_of_a_shipped_slurm_blueprint_loads_or_names_its_field(
    data: st.DataObject, name: str
) -> None:
    mutated, operation, where, _ = data.draw(mutations(SLURM_BLUEPRINTS[name]))
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, mutated)
        result = outcome(slurm_blueprint.load, slurm_blueprint.BlueprintError, path)
        if isinstance(result, slurm_blueprint.Blueprint):
            assert operation != "add"
            check_slurm_model(result)
        else:
            check_mutation(result, path, "blueprint", operation, where)


# Run:ai fields typed dict[...] take new keys (a pool name, a GPU count); the models reject them.
RUNAI_FREE_FORM = ("quotas", "gpus_per_pod")


@PROPERTY
@given(data=st.data())
def test_one_mutation_of_the_shipped_runai_blueprint_loads_or_names_its_field(data: st.DataObject) -> None:
    mutated, operation, where, _ = data.draw(mutations(RUNAI_BLUEPRINT))
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, mutated)
        result = outcome(runai_blueprint.load, runai_blueprint.RunaiBlueprintError, path)
        free_form = len(where) >= 2 and where[-2] in RUNAI_FREE_FORM
        if isinstance(result, runai_blueprint.RunaiBlueprint):
            assert operation != "add" or free_form
            dumped = result.model_dump()
            assert runai_blueprint.parse(copy.deepcopy(dumped)).model_dump() == dumped
        else:
            check_mutation(result, path, "Run:ai blueprint", operation, where, free_form)


# Characters that make YAML structure, so that random text reaches flow and block collections,
# anchors, tags and multi-document streams, not only plain scalars.
YAML_CHARS = st.sampled_from([*":-[]{},#&*!|>'\"%@`?\n \t", "a", "1", "0", ".", "name", "nodes"])
YAML_TEXT = st.text() | st.lists(YAML_CHARS, max_size=60).map("".join)
# Text PyYAML resolves as a timestamp (a date, or a date and time): an impossible one (2025-02-30,
# 2020-1-1 25:00:00) is the loader's error too.
DATES = st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True) | st.from_regex(
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[Tt ][0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?(Z|[-+][0-9]{1,2})?",
    fullmatch=True,
)
YAML_TEXT |= st.builds(
    "{}{}{}".format,
    st.sampled_from(["", "name: ", "description: ", "- ", "[", "{a: ", "? ", "a: 1\nb: "]),
    DATES,
    st.sampled_from(["", "\n", "]", "}", " # x", "\nc: d\n"]),
)


@PROPERTY
@given(text=YAML_TEXT)
@example(text="a: &x [*x]\n")  # a recursive alias
@example(text="--- 1\n--- 2\n")  # two documents
@example(text="name: !!binary 'x'\n")
@example(text="\ufeffname: default\n")  # a byte-order mark
@example(text="description: 2025-02-30\n")  # an impossible date
@example(text="[" * 1000 + "]" * 1000)  # nested deeper than the parser's recursion
def test_any_utf8_text_gives_a_blueprint_or_names_the_file(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, text)
        for load, error, what in [
            (slurm_blueprint.load, slurm_blueprint.BlueprintError, "blueprint"),
            (runai_blueprint.load, runai_blueprint.RunaiBlueprintError, "Run:ai blueprint"),
        ]:
            result = outcome(load, error, path)
            assert isinstance(result, str), "random text is never a whole blueprint"
            check_message(result, path, what)


def test_a_path_that_is_a_directory_names_the_file() -> None:
    with tempfile.TemporaryDirectory() as directory:
        result = outcome(slurm_blueprint.load, slurm_blueprint.BlueprintError, Path(directory))
        assert result == f"{directory}: cannot read blueprint: Is a directory"


# --- regression examples the properties found (lab/blueprint/strict.py read_mapping, hostlist.py) ---

LOADERS = [
    (slurm_blueprint.load, slurm_blueprint.BlueprintError, "blueprint"),
    (runai_blueprint.load, runai_blueprint.RunaiBlueprintError, "Run:ai blueprint"),
]


@PROPERTY
@given(content=st.binary(min_size=1))
@example(content=b"name: caf\xe9\n")  # a Latin-1 file
@example(content=b"\xff\xfen\x00a\x00")  # UTF-16
def test_a_file_that_is_not_utf8_is_a_blueprint_error(content: bytes) -> None:
    """A file that is not UTF-8 is the loader's error, naming the first byte that is not: read_mapping
    once let UnicodeDecodeError escape, as it caught only OSError around the read."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as problem:
        first_bad = problem.start
    else:
        return  # valid UTF-8 is test_any_utf8_text_gives_a_blueprint_or_names_the_file's
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, content)
        for load, error, what in LOADERS:
            message = outcome(load, error, path)
            assert message == f"{path}: cannot read {what}: not UTF-8 (byte {first_bad}); save it as UTF-8"


def is_a_date(year: int, month: int, day: int) -> bool:
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


@PROPERTY
@given(
    year=st.integers(min_value=0, max_value=9999),
    month=st.integers(min_value=0, max_value=99),
    day=st.integers(min_value=0, max_value=99),
)
@example(year=2020, month=13, day=1)
@example(year=2025, month=2, day=30)
@example(year=2024, month=2, day=29)
def test_an_impossible_date_is_a_blueprint_error(year: int, month: int, day: int) -> None:
    """An unquoted impossible date (``2025-02-30``, ``2020-13-01``) is "not valid YAML" with a hint to
    quote it; a real date reads. PyYAML's timestamp constructor raises a plain ValueError, not a
    yaml.YAMLError, which read_mapping once let escape."""
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, f"name: default\ndescription: {year:04d}-{month:02d}-{day:02d}\n")
        for load, error, what in LOADERS:
            message = outcome(load, error, path)
            check_message(message, path, what)
            bad_yaml = message.startswith(f"{path}: not valid YAML: ")
            assert bad_yaml == (not is_a_date(year, month, day)), message
            if bad_yaml:
                assert message.endswith(" (quote it if it is not a date)"), message


@settings(PROPERTY, max_examples=30)  # a thousand levels of "[" take ~0.3 s a load
@given(depth=st.integers(min_value=1, max_value=800), opener=st.sampled_from(["[", "{a: "]))
@example(depth=1000, opener="[")
@example(depth=3000, opener="{a: ")
def test_deeply_nested_yaml_is_a_blueprint_error(depth: int, opener: str) -> None:
    """From a few hundred levels (``[[[…]]]`` or ``{a: {a: …}}``; about 490 from a plain ``python3``,
    fewer under pytest) yaml.safe_load runs out of recursion: the loader says the file is "nested too
    deeply", where RecursionError once escaped. Fewer levels read as YAML and fail the schema."""
    closer = "]" if opener == "[" else "}"
    text = opener * depth + ("1" if closer == "}" else "") + closer * depth + "\n"
    with tempfile.TemporaryDirectory() as directory:
        path = write(directory, text)
        for load, error, what in LOADERS:
            message = outcome(load, error, path)
            check_message(message, path, what)
            if message.startswith(f"{path}: not valid YAML: "):
                assert message == f"{path}: not valid YAML: nested too deeply for a {what}"


HUGE_RANGE = """
import copy, sys, yaml
from lab.paths import BLUEPRINTS_DIR
from lab.blueprint import slurm_blueprint
data = yaml.safe_load((BLUEPRINTS_DIR / "default.yaml").read_text())
data["partitions"][1]["nodes"] = "dgx-[001-999999999]"
try:
    slurm_blueprint.parse(data, source="huge.yaml")
except slurm_blueprint.BlueprintError as error:
    print(error)
"""


def test_a_huge_hostlist_range_is_refused_without_expanding_it() -> None:
    """``partitions[1].nodes: dgx-[001-999999999]`` (one typo'd digit away from a real range) is a
    BlueprintError naming the field and the 1,024-node limit (lab/blueprint/hostlist.py MAX_NAMES), given
    before any name is built: the loader once expanded the billion names first, at ~1.5 s and ~100 MB
    per million, ending in MemoryError or the OOM killer. The check runs in a child process so that a
    regression costs 5 s, not the machine's memory."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", HUGE_RANGE],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the loader was still expanding dgx-[001-999999999] after 5 s") from None
    assert done.returncode == 0, done.stderr
    assert "partitions[1].nodes" in done.stdout, done.stdout
    assert "names more than 1024 nodes, more than a lab has" in done.stdout, done.stdout
