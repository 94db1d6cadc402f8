"""Host prerequisites: a reachable container engine, debootstrap, disk space.

As root on Debian, what is missing is installed with apt and the engine is started, each step said
aloud; anywhere else the lab stops with a :class:`PrerequisiteError` that gives the exact fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import docker
from docker.errors import DockerException

from lab.paths import state_root
from lab.progress import Progress

ENGINE_START_TIMEOUT_S = 60
MIN_FREE_GB = 4  # images ≈ 1.2 GB, debootstrap root ≈ 0.2 GB, containers and logs on top


class PrerequisiteError(RuntimeError):
    """Something the host lacks; the message says how to fix it."""


def engine_client() -> docker.DockerClient | None:
    """A client to a running engine, or None when none answers."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except DockerException:
        return None
    return client


def require_engine() -> docker.DockerClient:
    client = engine_client()
    if client is None:
        raise PrerequisiteError(
            "no container engine answers on $DOCKER_HOST or /var/run/docker.sock.\n"
            "Fix: run `lab up` (as root it installs and starts one), or start it yourself: "
            "apt-get install docker.io && dockerd &"
        )
    return client


def ensure_engine(progress: Progress) -> docker.DockerClient:
    """Return a client, installing Debian's docker.io and starting dockerd if needed (root only)."""
    client = engine_client()
    if client is not None:
        return client
    _require_root_on_debian("a container engine (Debian package docker.io)")
    if shutil.which("dockerd") is None:
        _apt_install(progress, ["docker.io"])
    _start_dockerd(progress)
    deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
    while time.monotonic() < deadline:
        client = engine_client()
        if client is not None:
            progress.say("container engine is up")
            return client
        time.sleep(0.5)
    log = state_root() / "dockerd.log"
    raise PrerequisiteError(
        f"dockerd did not answer within {ENGINE_START_TIMEOUT_S}s. Read {log} for its error."
    )


def ensure_debootstrap(progress: Progress) -> None:
    if shutil.which("debootstrap") is not None:
        return
    _require_root_on_debian("debootstrap (builds the base image from Debian's archive)")
    _apt_install(progress, ["debootstrap"])


def check_disk(path: Path, need_gb: float = MIN_FREE_GB) -> None:
    path.mkdir(parents=True, exist_ok=True)
    free_gb = shutil.disk_usage(path).free / 1e9
    if free_gb < need_gb:
        raise PrerequisiteError(
            f"only {free_gb:.1f} GB free under {path}; the lab needs {need_gb} GB.\n"
            "Fix: free space, or point AIFACTORY_LAB_STATE and the engine's data-root elsewhere."
        )


def _require_root_on_debian(what: str) -> None:
    if os.geteuid() != 0 or not Path("/etc/debian_version").exists():
        raise PrerequisiteError(
            f"the lab needs {what}, and installs it itself only as root on Debian.\n"
            "Fix: ask an administrator to run: apt-get install docker.io debootstrap && dockerd &"
        )


def _apt_install(progress: Progress, packages: list[str]) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with progress.step(f"installing {' '.join(packages)} with apt"):
        for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
            result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise PrerequisiteError(
                    f"`{' '.join(argv)}` failed (exit {result.returncode}):\n{result.stderr[-2000:]}"
                )


def _start_dockerd(progress: Progress) -> None:
    if Path("/run/systemd/system").is_dir():
        progress.say("starting docker with systemctl")
        subprocess.run(["systemctl", "start", "docker"], check=False)
        return
    log_path = state_root() / "dockerd.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    progress.say(f"starting dockerd in the background (log: {log_path})")
    with log_path.open("ab") as log:
        subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
