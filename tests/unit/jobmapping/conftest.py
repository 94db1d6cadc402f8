"""Shared helpers for the job-mapping script tests.

Every test runs the real executable (prolog/dcgm-job-mapping, or the epilog symlink) as a
subprocess with a controlled environment, against real files under tmp_path. Nothing is mocked.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
PROLOG = REPO / "prolog" / "dcgm-job-mapping"
EPILOG = REPO / "epilog" / "dcgm-job-mapping"
NODE = "dgx-001"
# The scripts run as executables (their own #! line). To try the suite on another interpreter,
# e.g. the oldest a site runs: DCGM_JOB_MAPPING_TEST_PYTHON=/usr/bin/python3.9 pytest ...
PYTHON = os.environ.get("DCGM_JOB_MAPPING_TEST_PYTHON", "")


def parse_logfmt(line: str) -> dict[str, str]:
    """`a=1 b="x y"` -> {'a': '1', 'b': 'x y'}: the script's logfmt (quoted: \\\\ \\" \\xNN escapes)."""
    fields: dict[str, str] = {}
    i = 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        eq = line.index("=", i)
        key, i = line[i:eq], eq + 1
        if i < len(line) and line[i] == '"':
            i += 1
            value = []
            while line[i] != '"':
                if line[i] == "\\" and line[i + 1] == "x":  # a control character, \xNN
                    value.append(chr(int(line[i + 2 : i + 4], 16)))
                    i += 4
                    continue
                if line[i] == "\\":
                    i += 1
                value.append(line[i])
                i += 1
            i += 1
            fields[key] = "".join(value)
        else:
            end = line.find(" ", i)
            end = len(line) if end < 0 else end
            fields[key], i = line[i:end], end
    return fields


def snapshot(root: Path, exclude: Path | None = None) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under root (symlinks not followed): kind, content or link target, mode."""
    tree: dict[str, tuple[str, bytes | str, int]] = {}
    for path in sorted(root.rglob("*")):
        if exclude is not None and (path == exclude or exclude in path.parents):
            continue
        st = path.lstat()
        rel = str(path.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            tree[rel] = ("link", os.readlink(path), st.st_mode)
        elif stat.S_ISREG(st.st_mode):
            tree[rel] = ("file", path.read_bytes(), st.st_mode)
        elif stat.S_ISDIR(st.st_mode):
            tree[rel] = ("dir", "", st.st_mode)
        else:
            tree[rel] = ("other", "", st.st_mode)
    return tree


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    log: dict[str, str]  # the run's log line, parsed

    def assert_ok(self, job: str | int) -> None:
        assert self.returncode == 0
        assert self.log["job_id"] == str(job)
        assert self.log["result"] == "ok", self.log
        assert "error" not in self.log

    def assert_skipped(self, job: str | int, error: str, result: str = "skipped") -> None:
        """Exit 0, nothing on stdout, and the log line names the job and the problem."""
        assert self.returncode == 0
        assert self.stdout == ""
        assert self.log["job_id"] == str(job)
        assert self.log["result"] == result, self.log
        assert error in self.log.get("error", ""), self.log


@dataclass
class Node:
    """One compute node's view: a mapping dir inside `root`, a log and a config file elsewhere."""

    base: Path
    root: Path = field(init=False)
    dir: Path = field(init=False)
    log: Path = field(init=False)
    conf: Path = field(init=False)

    PROLOG = PROLOG
    EPILOG = EPILOG
    PYTHON = PYTHON or "/usr/bin/python3"  # the interpreter of the #! line

    @staticmethod
    def command(script: Path) -> list[str]:
        """How to start a script: exec it, or hand it to DCGM_JOB_MAPPING_TEST_PYTHON."""
        return [PYTHON, "-IS", str(script)] if PYTHON else [str(script)]

    def __post_init__(self) -> None:
        self.root = self.base / "root"
        self.dir = self.root / "job-mapping"
        self.log = self.base / "log" / "dcgm-job-mapping.log"
        self.conf = self.base / "etc" / "dcgm-job-mapping.conf"
        self.root.mkdir(parents=True)
        self.log.parent.mkdir()
        self.conf.parent.mkdir()
        self.conf.write_text("")  # never read the host's /etc/slurm/dcgm-job-mapping.conf

    def env(self, **extra: str | None) -> dict[str, str]:
        """What slurmd would pass (plus the test's dir, log and config); None drops a key."""
        env = {
            "SLURMD_NODENAME": NODE,
            "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
            "DCGM_HPC_JOB_MAPPING_DIR": str(self.dir),
            "DCGM_JOB_MAPPING_LOG": str(self.log),
            "DCGM_JOB_MAPPING_CONF": str(self.conf),
        }
        merged: dict[str, str | None] = {**env, **extra}
        return {key: value for key, value in merged.items() if value is not None}

    def run(
        self,
        action: str,
        job: str | int | None,
        gpus: str | None,
        script: Path = PROLOG,
        args: tuple[str, ...] = (),
        user: int | None = None,
        preexec_fn: Callable[[], None] | None = None,
        **extra: str | None,
    ) -> Run:
        """Run the script as slurmd would for `action` (prolog/epilog) and return its log line."""
        slurmd: dict[str, str | None] = {
            "SLURM_SCRIPT_CONTEXT": f"{action}_slurmd" if action else None,
            "SLURM_JOB_ID": None if job is None else str(job),
            "SLURM_JOB_GPUS": gpus,
        }
        env = self.env(**{**slurmd, **extra})
        lines_before = self.log_lines()
        done = subprocess.run(
            [*self.command(script), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            user=user,
            preexec_fn=preexec_fn,
            check=False,
        )
        new = self.log_lines()[len(lines_before) :]
        if not new and done.stderr.startswith("ts="):  # the stderr fallback
            new = [done.stderr]
        assert len(new) == 1, f"expected exactly one log line, got {new!r} / {done.stderr!r}"
        return Run(done.returncode, done.stdout, done.stderr, parse_logfmt(new[0].rstrip("\n")))

    def prolog(self, job: str | int | None, gpus: str | None, **kw: Any) -> Run:
        return self.run("prolog", job, gpus, **kw)

    def epilog(self, job: str | int | None, gpus: str | None, **kw: Any) -> Run:
        return self.run("epilog", job, gpus, **kw)

    def read(self, name: str) -> bytes:
        return (self.dir / name).read_bytes()

    def ids(self, name: str) -> list[str]:
        return self.read(name).decode().splitlines()

    def snapshot(self, outside: bool = True) -> dict[str, tuple[str, bytes | str, int]]:
        """The tree around the mapping dir (outside=True) or the mapping dir itself."""
        return snapshot(self.root, exclude=self.dir) if outside else snapshot(self.dir)

    @staticmethod
    def parse(line: str) -> dict[str, str]:
        assert line.endswith("\n") and line.count("\n") == 1, repr(line)
        return parse_logfmt(line[:-1])

    def log_lines(self) -> list[str]:
        return self.log.read_text().splitlines(keepends=True) if self.log.exists() else []


@pytest.fixture
def node(tmp_path: Path) -> Node:
    return Node(tmp_path)


@pytest.fixture
def node_at() -> type[Node]:
    """Node itself, for tests that need the tree somewhere other than tmp_path."""
    return Node
