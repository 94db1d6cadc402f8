"""Property: the DCGM shim's reader of the HPC job-mapping directory (lab/dcgm/hpc.py) returns what
dcgm-exporter 4.5.3-4.8.2's ``internal/pkg/transformation/hpc.go`` reads from the same directory, or
fails the scrape with the error the tag returns; never another exception.

The directories are random: GPU names, MIG names, junk names (non-ASCII digits among them) and
dotfiles; files with random lines, binary, empty, CRLF, duplicate and 64 KiB lines; subdirectories,
symlinks to files and to directories, dangling and looping symlinks.

The oracle below is written from the tag's code, not from the shim's: Go's ``regexp``
``^\\d+(\\.\\d+)?$`` (``\\d`` is ASCII, ``$`` is the end of the text), ``os.ReadDir`` (sorted,
``Info()`` is an lstat), ``os.Open`` (follows symlinks, opens a directory) and ``bufio.Scanner`` with
``ScanLines`` (a 64 KiB token limit, one trailing ``\\r`` dropped). Each directory is built in a fresh
``tempfile.TemporaryDirectory``: function-scoped fixtures are not reset between examples.

The properties found two places where the shim once differed from the tag: it listed files named
with non-ASCII digits or a trailing newline ("٣", "0\\n"), and it failed a symlink to a directory with
``open`` where the tag says ``read``. lab/dcgm/hpc.py now reads as the tag does; the regression tests at
the end keep those inputs, and the main property generates them again.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lab.dcgm.hpc import GPU_FILE_NAME, HpcJobMapper, JobMappingError, apply_hpc_jobs
from lab.dcgm.samples import Sample
from tests.unit.dcgm.dcgm_testing import power_sample

IO = settings(deadline=None)

# --- the tag, from hpc.go@4.5.3-4.8.2 ---

GO_MAX_TOKEN = 64 * 1024  # bufio.MaxScanTokenSize: the buffer holds a line and its "\n"


def go_valid_gpu_file(name: str) -> bool:
    """validGPUFile's ``^\\d+(\\.\\d+)?$`` as Go's regexp reads it: ``\\d`` is ASCII only and ``$``
    (without the m flag) matches only at the end of the text, as Python's ``\\Z``, not before a "\\n"."""
    return re.search(r"^\d+(\.\d+)?\Z", name, flags=re.ASCII) is not None


class TooLong(Exception):
    pass


class Blob(bytes):
    """File content that hypothesis prints short: a failing 64 KiB example stays readable."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        head = bytes(self[:8])
        printer.text(f"{head!r} + … ({len(self)} bytes)" if len(self) > 80 else repr(bytes(self)))


def go_scan_lines(data: bytes) -> list[bytes]:
    """bufio.Scanner with ScanLines over a whole file: tokens, or TooLong (bufio.ErrTooLong).

    A token must fit the 64 KiB buffer before its "\\n" is seen, so a line of 65,536 bytes or more
    (counting a "\\r" before the "\\n") is too long, with or without a newline after it.
    """
    tokens, start = [], 0
    while start < len(data):
        newline = data.find(b"\n", start)
        end = len(data) if newline < 0 else newline
        token = data[start:end]
        if len(token) >= GO_MAX_TOKEN:
            raise TooLong
        tokens.append(token[:-1] if token.endswith(b"\r") else token)
        start = end + 1
    return tokens


def go_read(mapping: Path, entries: dict[str, tuple[str, bytes]]) -> dict[str, list[str]] | str:
    """What Process builds from a directory holding ``entries``, or the error text it returns."""
    jobs: dict[str, list[str]] = {}
    for name in sorted(entries):  # os.ReadDir sorts by name
        kind, content = entries[name]
        if kind == "dir" or not go_valid_gpu_file(name):  # Info() is an lstat: links are files
            continue
        path = mapping / name
        if kind == "link to a dir":  # os.Open opens a directory; bufio.Scanner's first Read fails
            return f"read {path}: is a directory"
        if kind == "dangling link":
            return f"open {path}: no such file or directory"
        if kind == "link loop":
            return f"open {path}: too many levels of symbolic links"
        try:
            tokens = go_scan_lines(content)
        except TooLong:
            return "bufio.Scanner: token too long"
        jobs[name] = [token.decode("utf-8", errors="surrogateescape") for token in tokens]
    return jobs


# --- random mapping directories ---

ASCII_NUMBER = st.from_regex(r"[0-9]{1,4}", fullmatch=True)
GPU_NAMES = ASCII_NUMBER | st.builds("{}.{}".format, ASCII_NUMBER, ASCII_NUMBER)


JUNK_NAMES = st.text(
    alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
).filter(lambda name: name not in (".", "..") and len(name.encode()) <= 255)
# Names a Python \d or $ would take and Go's regexp does not: Unicode digits and a final newline.
UNICODE_DIGITS = st.characters(whitelist_categories=("Nd",))
NOT_GO_DIGITS = st.one_of(
    st.sampled_from(["\u0663", "\uff11", "0.\u0663", "\u0661\u0662", "\U0001d7ce", "0\n", "0.1\n", "\n"]),
    st.lists(UNICODE_DIGITS | st.sampled_from("0."), min_size=1, max_size=4)
    .map("".join)
    .filter(lambda name: name not in (".", "..")),
    GPU_NAMES.map(lambda name: name + "\n"),
)
ODD_NAMES = st.sampled_from(
    [".lock", ".tmp.0", ".0", "0.", "0.1.2", "+0", "-1", " 0", "0 ", "1e5", "0x1", "GPU-0", "0.txt", "00"]
)
NAMES = GPU_NAMES | JUNK_NAMES | ODD_NAMES | NOT_GO_DIGITS

LINE = st.binary(max_size=12).map(lambda line: line.replace(b"\n", b"")) | st.sampled_from(
    [b"4711", b" 4711 ", b"4711\r", b"", b"\r", "é".encode(), b"\xff\xfe", b'hpc_job="x"']
)
LINES = st.lists(LINE, max_size=6)
CONTENT = st.one_of(
    st.builds(
        lambda lines, ending, last: ending.join(lines) + (ending if last and lines else b""),
        LINES,
        st.sampled_from([b"\n", b"\r\n"]),
        st.booleans(),
    ),
    st.binary(max_size=64),
    LINES.map(lambda lines: b"\n".join(lines + lines)),  # every id twice
    st.builds(  # around bufio's 64 KiB limit
        lambda size, ending, head: Blob(head + b"7" * size + ending),
        st.integers(min_value=GO_MAX_TOKEN - 3, max_value=GO_MAX_TOKEN + 2),
        st.sampled_from([b"", b"\n", b"\r\n"]),
        st.sampled_from([b"", b"4711\n"]),
    ),
)
ENTRY = st.one_of(
    CONTENT.map(lambda content: ("file", content)),
    CONTENT.map(lambda content: ("link to a file", content)),
    st.just(("dir", b"")),
    st.just(("link to a dir", b"")),
    st.just(("dangling link", b"")),
    st.just(("link loop", b"")),
)


def build(root: Path, entries: dict[str, tuple[str, bytes]]) -> Path:
    """``root/job-mapping`` holding ``entries``; link targets live in ``root/outside``."""
    mapping, outside = root / "job-mapping", root / "outside"
    mapping.mkdir()
    outside.mkdir()
    for index, (name, (kind, content)) in enumerate(entries.items()):
        path = mapping / name
        if kind == "file":
            path.write_bytes(content)
        elif kind == "dir":
            path.mkdir()
            (path / "0").write_bytes(b"9\n")  # what a reader that descended would find
        elif kind == "link to a file":
            target = outside / f"target-{index}"
            target.write_bytes(content)
            path.symlink_to(target)
        elif kind == "link to a dir":
            target = outside / f"dir-{index}"
            target.mkdir()
            (target / "0").write_bytes(b"9\n")
            path.symlink_to(target)
        elif kind == "dangling link":
            path.symlink_to(outside / f"missing-{index}")
        else:
            path.symlink_to(name)  # a link to itself: ELOOP on open
    return mapping


def tree(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under root, links not followed: mode and content or target."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory) / name
            mode = path.lstat().st_mode
            content: bytes | str = (
                os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else ""
            )
            found[str(path.relative_to(root))] = (mode, content)
    return found


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, level: int) -> list[str]:
        return [record.getMessage() for record in self.records if record.levelno == level]


def node_log(name: str) -> tuple[logging.Logger, Records]:
    """A logger of its own with a fresh handler (caplog is function-scoped, examples are not)."""
    log = logging.getLogger(f"tests.property.hpc.{name}")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    for handler in list(log.handlers):
        log.removeHandler(handler)
    records = Records()
    log.addHandler(records)
    return log, records


def read(mapping: Path, log: logging.Logger) -> dict[str, list[str]] | str | None:
    try:
        return HpcJobMapper(mapping, log).read()
    except JobMappingError as error:  # the scrape fails (HTTP 500) with this text in the log line
        return str(error)


@IO
@given(entries=st.dictionaries(NAMES, ENTRY, max_size=8))
@example(entries={"0": ("file", b"101\n101\n"), "1": ("file", b""), "sub": ("dir", b"")})
@example(entries={"0": ("link to a file", b"7\r\n"), "2.0": ("file", b"8")})
@example(entries={"0": ("file", Blob(b"1" * 65535 + b"\r\n"))})
@example(entries={"\u0663": ("file", b"1\n"), "0\n": ("file", b"2\n"), "1": ("file", b"3\n")})
@example(entries={"0": ("link to a dir", b""), "1": ("file", b"4\n")})
def test_the_reader_returns_what_the_tag_reads_or_its_error(entries: dict[str, tuple[str, bytes]]) -> None:
    log, records = node_log("read")
    with tempfile.TemporaryDirectory() as root:
        mapping = build(Path(root), entries)
        before = tree(Path(root))
        expected = go_read(mapping, entries)

        assert read(mapping, log) == expected
        assert tree(Path(root)) == before  # a reader writes nothing, follows nothing it should not
    if isinstance(expected, dict):  # hpc.go's Debug line of the files it kept, in order
        listed = ", ".join(f'"{name}"' for name in expected)
        kept = f"[]string{{{listed}}}" if expected else "[]string(nil)"
        assert f"HPC job mapping files: {kept}" in records.messages(logging.DEBUG)
    assert records.messages(logging.WARNING) == []  # lstat never fails on an entry just listed
    assert records.messages(logging.ERROR) == []


@IO
@given(
    exists_at_start=st.booleans(),
    steps=st.lists(st.sampled_from(["create", "remove", "scrape"]), max_size=12),
)
def test_a_missing_directory_is_logged_once_at_start_and_on_every_scrape_once_it_has_been_seen(
    exists_at_start: bool, steps: list[str]
) -> None:
    """hpc.go's two states: missing at start (silent until it appears) and vanished later (logged)."""
    log, records = node_log("missing")
    with tempfile.TemporaryDirectory() as root:
        mapping = Path(root) / "job-mapping"
        if exists_at_start:
            mapping.mkdir()
        mapper = HpcJobMapper(mapping, log)
        missing = not exists_at_start
        expected_errors = [
            f"HPC job mapping file directory '{mapping}' not found on initialization."
        ] * missing
        assert records.messages(logging.ERROR) == expected_errors
        for step in steps:
            if step == "create" and not mapping.exists():
                mapping.mkdir()
            elif step == "remove" and mapping.exists():
                mapping.rmdir()
            elif step == "scrape":
                if mapping.exists():
                    assert mapper.read() == {}
                    missing = False
                else:
                    assert mapper.read() is None
                    if not missing:
                        expected_errors.append(
                            f"Unable to access HPC job mapping file directory '{mapping}' - "
                            "directory not found. Ignoring."
                        )
            assert records.messages(logging.ERROR) == expected_errors


def gpu_sample(gpu: str, instance: str) -> Sample:
    return power_sample(gpu, "1g.10gb" if instance else "", instance)


SAMPLES = st.lists(
    st.builds(gpu_sample, st.sampled_from(["0", "1", "2"]), st.sampled_from(["", "0", "1"])), max_size=6
)
JOB_MAPS = st.none() | st.dictionaries(
    st.sampled_from(["0", "1", "2", "0.0", "0.1", "1.1", "3"]), st.lists(st.text(max_size=6), max_size=3)
)


@given(samples=SAMPLES, jobs=JOB_MAPS)
def test_each_job_of_a_gpu_gets_one_copy_of_its_series_and_other_series_pass_through(
    samples: list[Sample], jobs: dict[str, list[str]] | None
) -> None:
    original = list(samples)
    labelled = apply_hpc_jobs(samples, jobs)
    expected: list[tuple[Sample, str | None]] = []
    for sample in original:
        key = f"{sample.gpu}.{sample.gpu_instance_id}" if sample.gpu_instance_id else sample.gpu
        sample_jobs = (jobs or {}).get(key) or [None]
        expected += [(sample, job) for job in sample_jobs]
    assert len(labelled) == len(expected)
    for out, (sample, job) in zip(labelled, expected, strict=True):
        assert dict(out.attributes).get("hpc_job") == job
        assert (out.gpu, out.gpu_instance_id, out.value) == (sample.gpu, sample.gpu_instance_id, sample.value)
    assert samples == original


# --- regression examples the properties found (lab/dcgm/hpc.py) ---


@given(name=st.text() | NOT_GO_DIGITS | st.from_regex(r"^\d+(\.\d+)?$") | st.from_regex(r"\A[0-9.\n]{0,6}\Z"))
@example(name="\u0663")  # ARABIC-INDIC DIGIT THREE
@example(name="\uff11")  # FULLWIDTH DIGIT ONE
@example(name="0\n")
@example(name="0.1")
def test_a_gpu_file_name_is_what_gos_regexp_matches(name: str) -> None:
    """GPU_FILE_NAME, with fullmatch, takes exactly the names the tag's ``^\\d+(\\.\\d+)?$`` takes.
    ``st.from_regex`` reads that pattern as Python does, so it draws the Unicode digits and the final
    "\\n" that the shim's Python ``re`` pattern once took with ``match``."""
    assert (GPU_FILE_NAME.fullmatch(name) is not None) == go_valid_gpu_file(name)


@pytest.mark.parametrize("name", ["\u0663", "\uff11", "0.\u0663", "\U0001d7ce", "0\n", "2.0\n"])
def test_only_ascii_digit_names_matched_whole_are_read(name: str) -> None:
    """A file named "٣", "１", "0.٣" or "0\\n" is skipped, as the tag's Go regexp (ASCII ``\\d``, ``$``
    at the very end) skips it: the shim once listed it and labelled series with its ids."""
    log, records = node_log("names")
    with tempfile.TemporaryDirectory() as root:
        mapping = build(Path(root), {name: ("file", b"4711\n"), "1": ("file", b"7\n")})
        assert read(mapping, log) == {"1": ["7"]}
    assert 'HPC job mapping files: []string{"1"}' in records.messages(logging.DEBUG)


def test_a_symlink_to_a_directory_fails_with_the_tags_read_error() -> None:
    """``read <dir>/0: is a directory``, as the tag says: Go's ``os.Open`` opens a directory without
    complaint (Info() is an lstat, so the link is listed as a file) and the first ``Read`` by
    bufio.Scanner fails. The shim once said ``open <dir>/0: is a directory``."""
    log, _ = node_log("link-to-dir")
    with tempfile.TemporaryDirectory() as root:
        mapping = build(Path(root), {})
        (mapping / "0").symlink_to(Path(root) / "outside")
        assert read(mapping, log) == f"read {mapping / '0'}: is a directory"
