"""Property: whatever environment and argv slurmd (or a person) hands the job-mapping Prolog/Epilog
(prolog/dcgm-job-mapping), its input functions return valid values or raise its ``Problem``, and a
whole run exits 0, prints no traceback, writes exactly one logfmt line (to its log, or to stderr when
the log cannot be written) and changes nothing outside the mapping directory.

Why: a Prolog that fails drains the node and requeues the job, so the script promises "every problem is
logged with the job id and skipped; the exit status is always 0". The script is not a module; the pure
functions are loaded from its file, and whole runs execute it as slurmd does, in a fresh temporary
directory per example (function-scoped fixtures are not reset between hypothesis examples).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import tempfile
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lab.dcgm.hpc import GPU_FILE_NAME
from lab.paths import PROJECT_ROOT
from tests.unit.jobmapping.conftest import parse_logfmt

PROLOG = PROJECT_ROOT / "prolog" / "dcgm-job-mapping"
EPILOG = PROJECT_ROOT / "epilog" / "dcgm-job-mapping"


def load_script() -> ModuleType:
    loader = SourceFileLoader("dcgm_job_mapping_script", str(PROLOG))
    spec = spec_from_loader(loader.name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    loader.exec_module(module)  # `if __name__ == "__main__"` keeps main() from running
    return module


script = load_script()
Problem = script.Problem

# The exporter's file names, as Go's regexp reads ^\d+(\.\d+)?$ (ASCII digits, $ at the very end).
GO_GPU_FILE = re.compile(r"[0-9]+(\.[0-9]+)?")
CANONICAL_ID = re.compile(r"0|[1-9][0-9]{0,9}")

# Garbage of every sort: unicode, control characters, huge, negative, lists, ranges, UUIDs.
TEXT = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=24)
NUMBERISH = st.sampled_from(
    ["0", "1", "007", "-1", "+1", " 3", "3 ", "1.5", "1e3", "0x10", "\u0663", "\uff11", "4294967296",
     "99999999999", "0-3", "1,2", "0,,1", ",", "GPU-0e7b3c2a-1c11-4a5b-9d10-2f7f0f0f0f0f", "x" * 5000]
)  # fmt: skip
GPU_LIST = st.lists(NUMBERISH | st.integers(min_value=-3, max_value=20).map(str), max_size=5).map(",".join)
# Bytes that are not UTF-8, as os.environ shows them (surrogateescape), e.g. a Latin-1 node name.
RAW_BYTES = st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b)
NOT_UTF8 = RAW_BYTES.map(lambda b: b.decode("utf-8", "surrogateescape"))
VALUE = TEXT | NUMBERISH | GPU_LIST | NOT_UTF8


ENV = st.fixed_dictionaries(
    {},
    optional={
        "SLURM_SCRIPT_CONTEXT": st.sampled_from(["prolog_slurmd", "epilog_slurmd", "prolog", ""]) | TEXT,
        "SLURM_JOB_ID": st.integers(min_value=0, max_value=2**33).map(str) | VALUE,
        "SLURM_JOB_GPUS": GPU_LIST | VALUE,
        "CUDA_VISIBLE_DEVICES": GPU_LIST | VALUE,
        "SLURMD_NODENAME": st.sampled_from(["dgx-001", "", ".", "..", "a/b", "rack01"]) | TEXT | NOT_UTF8,
        "DCGM_JOB_MAPPING_MIG": st.sampled_from(["0", "1", "yes", "TRUE", "On", "off"]) | TEXT,
        "DCGM_JOB_MAPPING_MIG_MAP": st.sampled_from(["0:0.1,1:0.2", "0:1", "0:0.1.2", "a:b"]) | VALUE,
        "DCGM_JOB_MAPPING_LOCK_TIMEOUT": st.sampled_from(["0", "5", "5.1", "nan", "inf", "-0", "1e-9"])
        | VALUE,
    },
)
ARGV = st.lists(st.sampled_from(["prolog", "epilog", "", "--help"]) | TEXT, max_size=2)


def mostly(plausible: st.SearchStrategy[Any], garbage: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Three draws in four from what slurmd sends, so that whole runs get as far as writing files."""
    return st.integers(min_value=0, max_value=3).flatmap(lambda draw: garbage if draw == 3 else plausible)


SLURMD_GPUS = st.lists(st.integers(min_value=0, max_value=7).map(str), min_size=1, max_size=4).map(",".join)
RUN_ENV = st.fixed_dictionaries(
    {
        "SLURM_JOB_ID": mostly(st.integers(min_value=1, max_value=2**32 - 1).map(str), VALUE),
        "SLURM_JOB_GPUS": mostly(SLURMD_GPUS, GPU_LIST | VALUE),
        "SLURMD_NODENAME": mostly(st.sampled_from(["dgx-001", "rack01"]), VALUE),
    },
    optional={
        "SLURM_SCRIPT_CONTEXT": mostly(st.sampled_from(["prolog_slurmd", "epilog_slurmd"]), TEXT),
        "CUDA_VISIBLE_DEVICES": mostly(SLURMD_GPUS, VALUE),
        "DCGM_JOB_MAPPING_MIG": st.sampled_from(["0", "1"]) | TEXT,
        "DCGM_JOB_MAPPING_MIG_MAP": st.sampled_from(["0:0.1,1:0.2,2:1.0,3:1.1", "0:1"]) | VALUE,
        "DCGM_JOB_MAPPING_LOCK_TIMEOUT": st.sampled_from(["0", "1"]) | VALUE,
    },
)
RUN_ARGV = mostly(st.sampled_from([[], ["prolog"], ["epilog"]]), ARGV)


def call(function: Any, *args: Any) -> Any:
    """The function's value, or the Problem it raised; anything else fails the property."""
    try:
        return function(*args)
    except Problem as problem:
        return problem


# --- the pure input functions ---

DIR_NAMES = st.sampled_from(["prolog", "prolog.d", "epilog", "epilog.d", "bin", "", "."]) | TEXT.filter(
    lambda name: "/" not in name
)


@given(argv_tail=ARGV, env=ENV, parent=DIR_NAMES, name=TEXT.filter(lambda n: "/" not in n))
@example(argv_tail=[], env={}, parent="epilog.d", name="50-dcgm")
def test_the_action_comes_from_argv_then_the_context_then_the_directory(
    argv_tail: list[str], env: dict[str, str], parent: str, name: str
) -> None:
    argv0 = f"/etc/slurm/{parent}/{name}" if parent else name
    got = call(script.decide_action, [argv0, *argv_tail], env)
    context = env.get("SLURM_SCRIPT_CONTEXT", "")
    directory = os.path.basename(os.path.dirname(os.path.abspath(argv0)))
    if argv_tail:
        expected: str | None = argv_tail[0] if argv_tail[0] in ("prolog", "epilog") else None
    elif context:
        expected = {"prolog_slurmd": "prolog", "epilog_slurmd": "epilog"}.get(context)
    else:
        expected = {"prolog": "prolog", "prolog.d": "prolog", "epilog": "epilog", "epilog.d": "epilog"}.get(
            directory
        )
    if expected is None:
        assert isinstance(got, Problem), got
    else:
        assert got == expected


@given(env=ENV)
def test_a_job_id_is_one_to_ten_ascii_digits_or_a_problem(env: dict[str, str]) -> None:
    raw = env.get("SLURM_JOB_ID", "")
    got = call(script.job_id_from, env)
    if re.fullmatch(r"[0-9]{1,10}", raw):
        assert got == str(int(raw))
        assert CANONICAL_ID.fullmatch(got)
    else:
        assert isinstance(got, Problem)


@given(env=ENV)
@example(env={"SLURM_JOB_GPUS": "", "CUDA_VISIBLE_DEVICES": "GPU-0e7b3c2a,GPU-1"})
@example(env={"SLURM_JOB_GPUS": " 03,3,x,\u0663"})
def test_gpu_indices_are_unique_canonical_indices_and_every_bad_entry_is_a_problem(
    env: dict[str, str],
) -> None:
    problems: list[str] = []
    got = script.gpu_indices(env, problems)
    raw = env.get("SLURM_JOB_GPUS", "").strip()
    source = "SLURM_JOB_GPUS"
    if not raw:
        raw, source = env.get("CUDA_VISIBLE_DEVICES", "").strip(), "CUDA_VISIBLE_DEVICES"
    entries = raw.split(",") if raw else []
    good = [str(int(e.strip())) for e in entries if re.fullmatch(r"[0-9]{1,10}", e.strip())]
    if source == "CUDA_VISIBLE_DEVICES" and len(good) < len(entries):
        assert got == [] and len(problems) == 1  # UUIDs (Slurm 25.11) name no mapping file
    else:
        assert got == list(dict.fromkeys(good))
        assert len(problems) == (len(entries) - len(good) if entries else 1)
    assert all(CANONICAL_ID.fullmatch(index) for index in got)


@given(env=ENV)
def test_mapping_names_are_always_names_the_exporter_reads(env: dict[str, str]) -> None:
    problems: list[str] = []
    settings_ = {**script.DEFAULTS, **{k: v for k, v in env.items() if k in script.DEFAULTS and v}}
    indices = script.gpu_indices(env, problems)
    names = script.mapping_names(indices, settings_, problems)
    assert all(GO_GPU_FILE.fullmatch(name) for name in names)
    assert all(script.is_mapping_name(name) for name in names)
    assert len(set(names)) == len(names)
    if settings_["DCGM_JOB_MAPPING_MIG"].lower() not in ("1", "yes", "true", "on"):
        assert names == indices


@given(name=TEXT | st.from_regex(r"\A[0-9.]{0,8}\Z") | NUMBERISH)
@example(name="0\n")
@example(name="\u0663")
def test_is_mapping_name_is_gos_regexp(name: str) -> None:
    """The names the Prolog writes are the names the exporter, and the lab's DCGM shim, read."""
    assert script.is_mapping_name(name) == bool(GO_GPU_FILE.fullmatch(name))
    assert script.is_mapping_name(name) == bool(GPU_FILE_NAME.fullmatch(name))


@given(raw=VALUE | st.floats().map(str))
def test_the_lock_timeout_is_0_to_5_seconds_and_anything_else_is_a_problem(raw: str) -> None:
    problems: list[str] = []
    got = script.lock_timeout({"DCGM_JOB_MAPPING_LOCK_TIMEOUT": raw}, problems)
    assert 0.0 <= got <= 5.0 and not math.isnan(got)
    try:
        ok = 0.0 <= float(raw) <= 5.0
    except ValueError:
        ok = False
    assert problems == ([] if ok else [f"DCGM_JOB_MAPPING_LOCK_TIMEOUT={raw!r} is not 0 to 5 s"])


@given(template=st.sampled_from(["/var/lib/map-%n", "/x/%n/y", "/x/.%n", "/x/%n%n", "/plain"]), node=TEXT)
@example(template="/x/%n", node="..")
@example(template="/x/%n%n", node=".")
def test_the_node_name_never_adds_a_path_component(template: str, node: str) -> None:
    got = call(script.expand_node, template, node)
    if "%n" not in template:
        assert got == template
    elif isinstance(got, str):
        assert got == template.replace("%n", node)
        assert got.count("/") == template.count("/")
        assert not {".", ".."} & (set(got.split("/")) - set(template.split("/")))
    else:
        assert not node or "/" in node or node in (".", "..")


# A config line: KEY=VALUE with optional blanks and quotes, a comment, a blank line or junk. No
# character str.splitlines() breaks on, so that "lines" means the same to the oracle and the script.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
CONF_TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\x00" + LINE_BREAKS, blacklist_categories=("Cs",)),
    max_size=16,
)
CONF_LINE = st.one_of(
    st.tuples(
        st.sampled_from([*script.DEFAULTS, "DCGM_TYPO", ""]),
        st.sampled_from(["=", " = ", "", "=="]),
        CONF_TEXT,
        st.sampled_from(["", '"', "'"]),
    ).map(lambda t: f"{t[0]}{t[1]}{t[3]}{t[2]}{t[3]}"),
    st.sampled_from(["", "   ", "# DCGM_JOB_MAPPING_MIG=1", "\t#x"]),
    CONF_TEXT,
)


def oracle_config(text: str) -> dict[str, str]:
    """docs/job-mapping.md: KEY=VALUE lines, '#' comments, blank lines, one pair of quotes stripped."""
    values = {}
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if key in script.DEFAULTS:
            values[key] = value
    return values


@settings(deadline=None)
@given(env=ENV, lines=st.lists(CONF_LINE, max_size=8), conf=st.sampled_from(["file", "missing", "dir"]))
def test_settings_are_the_environment_over_the_config_file_over_the_defaults(
    env: dict[str, str], lines: list[str], conf: str
) -> None:
    text = "\n".join(lines)
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "dcgm-job-mapping.conf"
        if conf == "file":
            path.write_text(text, encoding="utf-8")
        elif conf == "dir":
            path.mkdir()
        problems: list[str] = []
        got = script.load_settings({**env, "DCGM_JOB_MAPPING_CONF": str(path)}, problems)
    from_file = oracle_config(text) if conf == "file" else {}
    assert got == {
        key: env.get(key) or from_file.get(key) or default for key, default in script.DEFAULTS.items()
    }
    optional = ("DCGM_JOB_MAPPING_MIG_MAP", "DCGM_JOB_MAPPING_GPU_UUIDS")  # empty by default
    assert all(value for key, value in got.items() if key not in optional)
    if conf != "file":
        assert len(problems) == 1


@given(ids=st.lists(st.from_regex(r"\A[0-9]{1,10}\Z"), max_size=6), data=st.binary(max_size=40))
@example(ids=[], data=b"7\n\n")
@example(ids=[], data=b"\xd9\xa3\n")  # "٣": a digit to str.isdigit, not to the exporter's users
def test_mapping_file_contents_round_trip_and_garbage_is_a_problem(ids: list[str], data: bytes) -> None:
    assert script.parse_ids(script.render_ids(ids)) == ids
    got = call(script.parse_ids, data)
    if isinstance(got, Problem):
        return
    assert all(re.fullmatch(r"[0-9]+", job) for job in got)
    assert script.render_ids(got) in (data, data + b"\n")


@given(record=st.fixed_dictionaries({}, optional=dict.fromkeys(script.LOG_FIELDS, VALUE)))
@example(record={"error": 'a "quoted" \\ line\nand\x7fmore', "node": "="})
def test_a_log_record_is_one_line_that_reads_back(record: dict[str, str]) -> None:
    line = script.format_line(record)
    assert line.endswith("\n") and line.count("\n") == 1
    shown = [k for k in script.LOG_FIELDS if record.get(k) or k not in script.OPTIONAL_FIELDS]
    fields = parse_logfmt(line[:-1])
    assert list(fields) == shown
    assert fields == {key: record.get(key, "") for key in shown}


# --- whole runs, as slurmd starts them ---

PLANTED = ["0", "1", "3.1", ".lock", ".tmp.0", "2", "notes"]


def tree(root: Path) -> dict[str, tuple[int, bytes | str]]:
    found: dict[str, tuple[int, bytes | str]] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            mode = path.lstat().st_mode
            content: bytes | str = (
                os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else ""
            )
            found[os.path.relpath(path, root)] = (mode, content)
    return found


def relative(path: object, base: Path) -> str | None:
    """An absolute path the script would use, relative to the test's tree; None if it uses none."""
    return os.path.relpath(path, base) if isinstance(path, str) and os.path.isabs(path) else None


def inside(path: str, directory: str | None) -> bool:
    return directory is not None and (path == directory or path.startswith(directory + os.sep))


def to_bytes(env: dict[str, str]) -> dict[bytes, bytes]:
    return {key.encode(): value.encode("utf-8", "surrogateescape") for key, value in env.items()}


@settings(deadline=None, max_examples=40)
@given(
    env=RUN_ENV,
    argv=RUN_ARGV,
    epilog=st.booleans(),
    mapping=mostly(
        st.sampled_from(["job-mapping", "map-%n"]), st.sampled_from(["relative", "missing/x", "a-file"])
    ),
    log=st.sampled_from(["log/dcgm-job-mapping.log", "log/%n.log", "-", "no-such-dir/x.log"]),
    planted=st.sets(st.sampled_from(PLANTED)),
    conf=st.lists(CONF_LINE, max_size=4).map("\n".join),
)
@example(
    env={"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "0,2"},
    argv=[],
    epilog=False,
    mapping="job-mapping",
    log="log/dcgm-job-mapping.log",
    planted={".lock", "2", ".tmp.0"},
    conf="",
)
def test_a_run_exits_0_logs_one_line_and_writes_only_in_the_mapping_dir(
    env: dict[str, str],
    argv: list[str],
    epilog: bool,
    mapping: str,
    log: str,
    planted: set[str],
    conf: str,
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        base = Path(directory)
        root, outside = base / "root", base / "outside"
        for folder in (root, outside, base / "log", base / "etc"):
            folder.mkdir()
        (outside / "victim").write_bytes(b"not yours\n")
        (root / "a-file").write_bytes(b"not a directory\n")
        (base / "etc" / "dcgm-job-mapping.conf").write_text(conf, encoding="utf-8")
        existing = root / "job-mapping"
        existing.mkdir()
        for name in planted:  # earlier jobs' files, and links a hostile user planted
            if name in (".lock", "2", ".tmp.0"):
                (existing / name).symlink_to(outside / "victim")
            else:
                (existing / name).write_bytes(b"7\n" if name != "notes" else b"\xff garbage\n")
        dir_template = "job-mapping" if mapping == "relative" else str(root / mapping)
        log_template = "-" if log == "-" else str(base / log)
        full_env = {
            **env,
            "DCGM_HPC_JOB_MAPPING_DIR": dir_template,
            "DCGM_JOB_MAPPING_LOG": log_template,
            "DCGM_JOB_MAPPING_CONF": str(base / "etc" / "dcgm-job-mapping.conf"),
        }
        before = tree(base)

        done = subprocess.run(
            [str(EPILOG if epilog else PROLOG), *argv],
            env=to_bytes(full_env),
            cwd=base,
            capture_output=True,
            timeout=30,
            check=False,
        )

        after = tree(base)
    node = env.get("SLURMD_NODENAME", "")
    mapping_dir = relative(call(script.expand_node, dir_template, node), base)
    log_file = relative(call(script.expand_node, log_template, node), base)
    changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    strays = {path for path in changed - {log_file} if not inside(path, mapping_dir)}
    log_before, log_after = before.get(log_file or "", (0, b""))[1], after.get(log_file or "", (0, b""))[1]
    assert isinstance(log_before, bytes) and isinstance(log_after, bytes)
    new_line = log_after[len(log_before) :]

    assert done.returncode == 0
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr
    assert strays == set(), "changed outside the mapping directory"
    assert log_after.startswith(log_before)
    line = new_line or done.stderr  # the stderr fallback when the log cannot be written
    assert line.count(b"\n") == 1 and line.endswith(b"\n") and line.startswith(b"ts="), (
        new_line,
        done.stderr,
    )
    assert not (new_line and done.stderr), "one line, in one place"
    fields = parse_logfmt(line[:-1].decode("utf-8"))
    assert list(fields) == [key for key in script.LOG_FIELDS if key in fields]
    assert {key for key in script.LOG_FIELDS if key not in script.OPTIONAL_FIELDS} <= set(fields)
    job_id = env.get("SLURM_JOB_ID", "")
    if job_id.isprintable():  # what the line shows of other bytes is the "replace" codec's
        assert fields["job_id"] == job_id
    assert fields["result"] in ("ok", "partial", "skipped"), fields  # "error" is a caught bug
    for path in set(after) - set(before) - {log_file}:  # GPU files and the lock; no temp left behind
        assert (
            path == mapping_dir
            or os.path.basename(path) == ".lock"
            or GO_GPU_FILE.fullmatch(os.path.basename(path))
        ), path
