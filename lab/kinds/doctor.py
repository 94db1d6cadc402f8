"""What this machine lacks to run the lab (behind ``lab doctor``): one :class:`Finding` per check.

Each finding says who needs what it checks: the lab itself (missing: ``lab doctor`` exits 1), the lab
optionally (it comes up without it, with less: Debian's Prometheus page instead of the React UI), or
only the test suite (the conformance test's cgo, the web UI test's browser, the machine-like hosts'
SSH). Only a missing lab need fails the command; the others are reported with their fix.

Every check only looks: nothing is installed, started or created. Each takes what it inspects as
parameters (``which=shutil.which``, ``run=subprocess.run``, paths, the environment) so that tests pass
fakes; :func:`run_all` runs them on this machine and :func:`render` prints one line per check.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import docker

from lab.bringup.engine import MIN_FREE_GB
from lab.paths import state_root
from lab.prometheus_ui import build as prometheus_ui
from lab.slurm_exporter.binary import DEFAULT_ARCHIVE, GO_FALLBACK, SOURCE_ENV, cache_dir, go_path

MIN_PYTHON = (3, 11)
MIN_GO = (1, 26)  # the exporter's go.mod says go 1.26.0
DOCKER_PING_TIMEOUT_S = 5
GO_VERSION_TIMEOUT_S = 15
_GO_VERSION = re.compile(r"\bgo(\d+)\.(\d+)(?:\.(\d+))?")

Which = Callable[[str], str | None]
Run = Callable[..., Any]  # subprocess.run's shape: (argv, capture_output=, text=, ...) -> .stdout


Need = Literal["lab", "optional", "tests"]
# Said after a missing finding that does not fail `lab doctor` (only a missing lab need prints MISSING).
NOT_FATAL: dict[Need, str] = {
    "optional": "the lab comes up without it",
    "tests": "only the tests need it",
}


@dataclass(frozen=True)
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    need: Need = "lab"


def check_python(version: Sequence[int] = tuple(sys.version_info[:3])) -> Finding:
    shown = ".".join(str(part) for part in version[:3])
    if tuple(version[:2]) >= MIN_PYTHON:
        return Finding("python", True, f"{shown} ({sys.executable})")
    need = ".".join(map(str, MIN_PYTHON))
    return Finding("python", False, f"{shown} is too old (need ≥ {need})", f"use Python ≥ {need}")


def check_docker(from_env: Callable[..., Any] = docker.from_env, which: Which = shutil.which) -> Finding:
    """The daemon answers a ping (the lab talks to it with the SDK); the CLI is what ``lab sh`` execs."""
    try:
        from_env(timeout=DOCKER_PING_TIMEOUT_S).ping()
    except Exception as exc:  # any failure to reach the daemon, whatever the transport raises
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        return Finding(
            "docker",
            False,
            f"no daemon answers on $DOCKER_HOST or /var/run/docker.sock: {reason}",
            "`lab up` installs Debian's docker.io and starts dockerd as root; or start dockerd",
        )
    cli = which("docker")
    if cli is None:
        detail = "the daemon answers but no `docker` CLI is on PATH (`lab sh` needs it)"
        return Finding("docker", False, detail, "apt-get install docker.io")
    return Finding("docker", True, f"daemon answers; CLI {cli}")


def check_tool(
    name: str, fix: str, which: Which = shutil.which, why: str = "", need: Need = "lab"
) -> Finding:
    path = which(name)
    if path is None:
        return Finding(name, False, f"not on PATH{f' ({why})' if why else ''}", fix, need)
    return Finding(name, True, path, need=need)


def check_debootstrap(which: Which = shutil.which) -> Finding:
    return check_tool(
        "debootstrap",
        "apt-get install debootstrap (`lab up` does so as root on Debian), or `lab up --base-image IMAGE`",
        which,
        "builds the base image",
    )


def check_ansible(which: Which = shutil.which) -> Finding:
    return check_tool("ansible-playbook", "pip install -e '.[dev]' (ansible is a Python dependency)", which)


def check_just(which: Which = shutil.which) -> Finding:
    return check_tool("just", "pip install -e '.[dev]' (rust-just is a Python dependency)", which)


def check_cc(which: Which = shutil.which) -> Finding:
    return check_tool(
        "gcc",
        "apt-get install gcc libc6-dev",
        which,
        "cgo: the DCGM conformance test builds dcgm-exporter's renderer, whose go-dcgm needs it",
        "tests",
    )


def check_go(which: Which = shutil.which, run: Run = subprocess.run, fallback: Path = GO_FALLBACK) -> Finding:
    need = ".".join(map(str, MIN_GO))
    fix = f"install Go ≥ {need} (https://go.dev/dl/, e.g. to /usr/local/go), or `lab up --no-exporter`"
    go = go_path(which, fallback)
    if go is None:
        return Finding("go", False, f"neither `go` on PATH nor {fallback} (builds the Slurm exporter)", fix)
    try:
        argv = [go, "version"]
        result = run(argv, capture_output=True, text=True, check=False, timeout=GO_VERSION_TIMEOUT_S)
        output = f"{result.stdout or ''} {result.stderr or ''}"
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding("go", False, f"`{go} version` failed: {exc}", fix)
    match = _GO_VERSION.search(output)
    if match is None:
        return Finding("go", False, f"no version in `{go} version`: {output.strip()[:80]!r}", fix)
    found = match.group(0)
    if (int(match.group(1)), int(match.group(2))) < MIN_GO:
        return Finding("go", False, f"{found} ({go}) is too old (need ≥ go{need})", fix)
    return Finding("go", True, f"{found} ({go})")


def check_exporter_source(
    cache: Path | None = None, archive: Path = DEFAULT_ARCHIVE, environ: Mapping[str, str] = os.environ
) -> Finding:
    """A cached exporter binary, else ``$LAB_EXPORTER_SOURCE``, else the default tag archive."""
    cache = cache_dir() if cache is None else cache
    cached = sorted(cache.glob("*/slurm_exporter")) if cache.is_dir() else []
    if cached:
        return Finding("exporter", True, f"cached binary {cached[0]}")
    named = environ.get(SOURCE_ENV)
    if named:
        if Path(named).is_file():
            return Finding("exporter", True, f"${SOURCE_ENV}={named}")
        return Finding(
            "exporter",
            False,
            f"${SOURCE_ENV}={named} does not exist",
            f"point ${SOURCE_ENV} at the slurm_exporter tag archive, or unset it",
        )
    if archive.is_file():
        return Finding("exporter", True, f"source archive {archive}")
    return Finding(
        "exporter",
        False,
        f"no cached binary, no ${SOURCE_ENV}, no {archive} (only `go install` from the module proxy is left)",
        f"put {archive.name} in {archive.parent}, or set ${SOURCE_ENV}; or `lab up --no-exporter`",
    )


def check_web_ui_build(which: Which = shutil.which, root: Path | None = None) -> Finding:
    """Prometheus' web UI: cached, else Node and npm to build it (without them: Debian's page)."""
    hit = prometheus_ui.cached(root=root)
    if hit is not None:
        return Finding("npm", True, f"Prometheus web UI cached ({hit.tarball})", need="optional")
    missing = [tool for tool in ("node", "npm") if which(tool) is None]
    if missing:
        return Finding(
            "npm",
            False,
            f"{' and '.join(missing)} not on PATH and no cached web UI: Prometheus would serve Debian's "
            "page without its React UI",
            "apt-get install nodejs npm (Node ≥ 20; the tag's web/ui/.nvmrc says v20.5.1)",
            "optional",
        )
    built_when = "beside the first `lab up`, which does not wait for it"
    return Finding("npm", True, f"{which('npm')} (builds Prometheus' web UI {built_when})", need="optional")


def check_chromium(which: Which = shutil.which) -> Finding:
    return check_tool(
        "chromium",
        "apt-get install chromium",
        which,
        "the headless browser of tests/lab/test_prometheus_ui.py",
        "tests",
    )


def check_ssh(which: Which = shutil.which) -> Finding:
    return check_tool(
        "ssh",
        "apt-get install openssh-client",
        which,
        "machine-like hosts, `lab up --hosts systemd`, and their tests",
        "tests",
    )


def check_disk(
    root: Path | None = None,
    need_gb: float = MIN_FREE_GB,
    disk_usage: Callable[[Path], Any] = shutil.disk_usage,
) -> Finding:
    """Free space under the state root (or its nearest existing parent: nothing is created here)."""
    root = state_root() if root is None else root
    probe = root
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_gb = disk_usage(probe).free / 1e9  # GB, as engine.check_disk counts them
    detail = f"{free_gb:.1f} GB free under {root} (need {need_gb} GB)"
    if free_gb < need_gb:
        return Finding("disk", False, detail, "free space, or point AIFACTORY_LAB_STATE elsewhere")
    return Finding("disk", True, detail)


def check_cgroup(root: Path = Path("/sys/fs/cgroup")) -> Finding:
    """Informational: which cgroup hierarchy the host runs (always ok)."""
    if (root / "cgroup.controllers").is_file():
        return Finding("cgroup", True, f"v2 (unified, {root})")
    if (root / "unified" / "cgroup.controllers").is_file():
        return Finding("cgroup", True, f"v1 with a v2 hierarchy at {root / 'unified'} (hybrid)")
    if root.is_dir():
        return Finding("cgroup", True, f"v1 ({root})")
    return Finding("cgroup", True, f"unknown: no {root}")


def run_all() -> list[Finding]:
    return [
        check_python(),
        check_docker(),
        check_debootstrap(),
        check_go(),
        check_cc(),
        check_exporter_source(),
        check_web_ui_build(),
        check_chromium(),
        check_ssh(),
        check_ansible(),
        check_just(),
        check_disk(),
        check_cgroup(),
    ]


def lab_can_run(findings: Sequence[Finding]) -> bool:
    """Whether nothing the lab itself needs is missing (what the tests or the options need may be)."""
    return all(finding.ok for finding in findings if finding.need == "lab")


def render(findings: Sequence[Finding]) -> str:
    """One line per check: ``ok      go          go1.26.8 (...)`` or ``MISSING debootstrap  … fix: …``;
    a missing optional or test-only tool says so in its first word and does not fail the command."""
    width = max((len(finding.name) for finding in findings), default=0)
    lines = []
    for finding in findings:
        word = "ok" if finding.ok else "MISSING" if finding.need == "lab" else "missing"
        line = f"{word:<7} {finding.name:<{width}}  {finding.detail}"
        if not finding.ok and finding.fix:
            line += f"  fix: {finding.fix}"
        if not finding.ok and finding.need != "lab":
            line += f"  ({NOT_FATAL[finding.need]})"
        lines.append(line)
    if not lab_can_run(findings):
        lines.append("The lab cannot come up here until each MISSING line is fixed.")
    elif not all(finding.ok for finding in findings):
        lines.append("The lab can come up; the lines marked missing are for the tests or an option.")
    return "\n".join(lines)
