"""Hygiene: what `git ls-files` tracks holds no lab state, no secrets, no huge files, no host paths.

Runs ``git ls-files`` in the project root; without git (or outside a work tree) it fails, it never
skips. Content checks read the work tree's copy; a tracked file deleted from the work tree is about
to leave the index and has no content to check, so only its path is checked.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path, PurePosixPath

from lab.paths import PROJECT_ROOT

MAX_BYTES = 2 * 1024 * 1024
# Tracked files allowed above MAX_BYTES, each with the reason. None today: the largest tracked file is
# captures/default-slurm_exporter-1.8.4/slurm/controller_9341.prom at ≈ 0.5 MB.
LARGE_FILE_ALLOW_LIST: dict[str, str] = {}
PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")  # PEM: RSA, EC, OPENSSH, PKCS#8
# Built with + so that this file does not contain what it looks for.
HOST_PATHS = ("/work" + "/main", "/root" + "/", "/tmp" + "/ci")
HOST_PATHS_ALLOWED_UNDER = ("captures/",)  # provenance headers name the paths they were taken with
SECRET_NAMES = ("munge.key", "jwt*.key", "hmac-sha256.key")  # the egress pseudonyms' key too


@cache
def tracked() -> tuple[str, ...]:
    git = shutil.which("git")
    assert git is not None, "git is not on PATH: the hygiene check needs `git ls-files`; install git"
    result = subprocess.run(
        [git, "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=False, timeout=60
    )
    assert result.returncode == 0, (
        f"`git ls-files` failed in {PROJECT_ROOT} (exit {result.returncode}): "
        f"{result.stderr.decode(errors='replace').strip()}"
    )
    names = tuple(name for name in result.stdout.decode().split("\0") if name)
    assert names, f"`git ls-files` lists nothing in {PROJECT_ROOT}"
    return names


def present() -> list[tuple[str, Path]]:
    return [(name, PROJECT_ROOT / name) for name in tracked() if (PROJECT_ROOT / name).is_file()]


def is_text(content: bytes) -> bool:
    return b"\0" not in content[:8192]


def test_git_lists_the_project() -> None:
    assert "pyproject.toml" in tracked()


def test_no_lab_state_is_tracked() -> None:
    state = [name for name in tracked() if name.startswith(".lab/")]
    assert not state, "lab state (.lab/) is tracked; `git rm --cached` it:\n" + "\n".join(state)


def test_no_key_file_is_tracked() -> None:
    keys = [
        name
        for name in tracked()
        if any(fnmatch.fnmatch(PurePosixPath(name).name, pattern) for pattern in SECRET_NAMES)
    ]
    assert not keys, "munge, JWT or egress key files are tracked:\n" + "\n".join(keys)


def test_no_private_key_is_tracked() -> None:
    found = [name for name, path in present() if PRIVATE_KEY.search(path.read_bytes())]
    assert not found, "tracked files contain a PEM private key:\n" + "\n".join(found)


def test_no_large_file_is_tracked() -> None:
    large = [
        f"{name}: {path.stat().st_size} bytes (limit {MAX_BYTES})"
        for name, path in present()
        if path.stat().st_size > MAX_BYTES and name not in LARGE_FILE_ALLOW_LIST
    ]
    assert not large, "tracked files above 2 MiB (add to LARGE_FILE_ALLOW_LIST with a reason):\n" + "\n".join(
        large
    )


def test_the_large_file_allow_list_names_tracked_files() -> None:
    stale = sorted(set(LARGE_FILE_ALLOW_LIST) - set(tracked()))
    assert not stale, f"LARGE_FILE_ALLOW_LIST names untracked files: {stale}"


def test_no_host_path_of_this_machine_in_tracked_text() -> None:
    hits = []
    for name, path in present():
        if name.startswith(HOST_PATHS_ALLOWED_UNDER):
            continue
        content = path.read_bytes()
        if not is_text(content):
            continue
        for number, line in enumerate(content.decode(errors="replace").splitlines(), start=1):
            hits += [
                f"{name}:{number}: {host} in {line.strip()[:120]!r}" for host in HOST_PATHS if host in line
            ]
    assert not hits, "host paths of this machine in tracked files:\n" + "\n".join(hits)


def test_the_patterns_find_what_they_should() -> None:
    assert PRIVATE_KEY.search(b"x\n-----BEGIN OPENSSH " + b"PRIVATE KEY-----\nAAAA")
    assert PRIVATE_KEY.search(b"-----BEGIN " + b"PRIVATE KEY-----")
    assert not PRIVATE_KEY.search(b"-----BEGIN CERTIFICATE-----")
    assert fnmatch.fnmatch("jwt_hs256.key", SECRET_NAMES[1])
