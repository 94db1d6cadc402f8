"""pyslurm where the workload generator runs: the controller, which has the Slurm client, munge, the
lab's configuration and every plan user, as a site's login node has.

The cached wheel is unpacked on the host and copied in with the agent script (``put_archive``) under
``INSTALL_DIR``: no pip in the controller, nothing in its image. A marker with the wheel's and the
agent's sha256 makes this idempotent and is written last, so a cut-off copy is redone; a recreated
controller gets pyslurm again the next time the workload needs it.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

from docker.errors import DockerException
from docker.models.containers import Container

from lab import versions
from lab.workload import pyslurm_agent
from lab.workload.pyslurm_wheel import PyslurmError, WheelBuild

PARENT = "/usr/local/lib/aifactory-lab"
INSTALL_DIR = f"{PARENT}/{versions.PYSLURM_ARCHIVE_PREFIX}"
AGENT = f"{INSTALL_DIR}/pyslurm_agent.py"
MARKER = f"{INSTALL_DIR}/INSTALLED"
AGENT_SOURCE = Path(pyslurm_agent.__file__)


def marker_text(build: WheelBuild, agent: bytes) -> str:
    agent_sha256 = hashlib.sha256(agent).hexdigest()
    return f"wheel {build.wheel.name} sha256 {build.sha256}\nagent sha256 {agent_sha256}\n"


def ensure_installed(controller: Container, build: WheelBuild) -> str:
    """Install the wheel and the agent unless this controller has exactly them; the agent's path."""
    agent = AGENT_SOURCE.read_bytes()
    wanted = marker_text(build, agent)
    try:
        found = controller.exec_run(["cat", MARKER])
        if found.exit_code == 0 and found.output.decode("utf-8", "replace") == wanted:
            return AGENT
        _run(controller, ["rm", "-rf", INSTALL_DIR])
        _run(controller, ["mkdir", "-p", PARENT])
        if not controller.put_archive(PARENT, install_tar(build.wheel, agent)):
            raise PyslurmError(f"copying pyslurm into {controller.name}:{INSTALL_DIR} failed")
        if not controller.put_archive(INSTALL_DIR, _tar({"INSTALLED": wanted.encode()})):
            raise PyslurmError(f"writing {controller.name}:{MARKER} failed")
    except DockerException as error:
        raise PyslurmError(f"installing pyslurm into {controller.name} failed: {error}") from error
    return AGENT


def install_tar(wheel: Path, agent: bytes) -> bytes:
    """The install directory as a tar: the wheel's members under ``site/``, the agent beside them."""
    prefix = versions.PYSLURM_ARCHIVE_PREFIX
    files = {f"{prefix}/pyslurm_agent.py": agent}
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                name = Path(member.filename)
                if member.is_dir():
                    continue
                if name.is_absolute() or ".." in name.parts:
                    raise PyslurmError(f"{wheel}: member {member.filename} points outside the wheel")
                files[f"{prefix}/site/{member.filename}"] = archive.read(member)
    except zipfile.BadZipFile as error:
        raise PyslurmError(
            f"{wheel} is not a wheel ({error}). Fix: delete it; the next run builds it again."
        ) from error
    return _tar(files)


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        directories = sorted({str(parent) for path in files for parent in Path(path).parents} - {"."})
        for directory in directories:
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644  # readable by every plan user; root owns it
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _run(controller: Container, argv: list[str]) -> None:
    result = controller.exec_run(argv)
    if result.exit_code != 0:
        raise PyslurmError(
            f"`{' '.join(argv)}` in {controller.name} failed (exit {result.exit_code}): "
            f"{result.output.decode('utf-8', 'replace').strip()}"
        )
