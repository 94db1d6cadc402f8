"""pyslurm's wheel, built once from the pinned tag archive and cached by version, archive and Slurm.

PyPI carries pyslurm only for Slurm releases the lab does not run, and pyslurm's major.minor must equal
Slurm's, so the lab builds the tag ``v24.11.0`` ("This Version is for Slurm 24.11.x") itself:

1. The archive (``../shared/vendor/pyslurm-24.11.0.tar.gz``, or ``--pyslurm-source`` /
   ``$LAB_PYSLURM_SOURCE``) must have the sha256 pinned in ``lab/versions.py``.
2. An image of the toolchain (``containers/pyslurm-build``: the lab's slurm-common image plus
   ``libslurm-dev`` at the pinned Slurm version and Debian's Cython 3.0) runs
   ``pip wheel --no-build-isolation --no-deps --no-index`` in the unpacked tree, without network, as
   ``../shared/vendor/PROVENANCE.md`` verified. Build isolation would fetch a Cython the tag does not
   compile with.
3. The wheel and a ``build.json`` (how, seconds, the wheel's sha256) go to
   ``.lab/cache/pyslurm-v24.11.0/archive-<sha12>-slurm-<deb version>/``; the next lab uses them.

The wheel is never baked into an image: it is copied into the controller when the workload needs it
(:mod:`lab.workload.pyslurm_install`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException
from docker.models.containers import Container
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from lab import archives, versions
from lab.bringup import images, lock
from lab.paths import VENDOR_DIR, state_root
from lab.progress import Progress

SOURCE_ENV = "LAB_PYSLURM_SOURCE"
DEFAULT_ARCHIVE = VENDOR_DIR / versions.PYSLURM_ARCHIVE
BUILD_TIMEOUT_S = 1800  # about 7 min measured at low priority on 2 busy cores (PROVENANCE.md), with margin
# Where Debian's libslurm-dev puts the headers and libslurmfull.so (setup.py's SLURM_INCLUDE_DIR and
# SLURM_LIB_DIR); the wheel's extension modules carry the library directory as their run path.
SLURM_INCLUDE_DIR = "/usr/include"
SLURM_LIB_DIR = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
# The build's own progress lines (pip --verbose passes setup.py's output on): Cython's, then the compiler's.
_STAGES = re.compile(r"^\s*(\[\s*\d+/\d+\] Cythonizing |building '[\w.]+' extension)")


class PyslurmError(RuntimeError):
    """pyslurm cannot be had or used; the message says why and what to do."""


@dataclass(frozen=True)
class WheelBuild:
    """A usable wheel and how it was made."""

    wheel: Path
    sha256: str
    how: str
    seconds: float  # the build's wall time; as recorded when the cached wheel is used
    cached: bool = False


_ARCHIVE = archives.PinnedArchive(
    "pyslurm's source archive",
    versions.PYSLURM_ARCHIVE,
    f"`git archive --format=tar.gz --prefix={versions.PYSLURM_ARCHIVE_PREFIX}/ {versions.PYSLURM_VERSION}`",
    f"--pyslurm-source PATH or ${SOURCE_ENV}",
)


def verify_archive(archive: Path, expected_sha256: str = versions.PYSLURM_ARCHIVE_SHA256) -> None:
    """Raise :class:`PyslurmError` unless ``archive`` is a readable file with the pinned sha256."""
    archives.verify(archive, expected_sha256, _ARCHIVE, PyslurmError)


def cache_dir(root: Path | None = None) -> Path:
    """One directory per archive and Slurm build: a new pin of either builds a new wheel."""
    way = f"archive-{versions.PYSLURM_ARCHIVE_SHA256[:12]}-slurm-{versions.SLURM_DEB_VERSION}"
    return (state_root() if root is None else root) / "cache" / f"pyslurm-{versions.PYSLURM_VERSION}" / way


def cached(root: Path | None = None) -> WheelBuild | None:
    """The cached wheel, when its record and file are there and the file is the one recorded."""
    directory = cache_dir(root)
    record = directory / "build.json"
    if not record.is_file():
        return None
    data = json.loads(record.read_text(encoding="utf-8"))
    wheel = directory / str(data["wheel"])
    if not wheel.is_file() or _sha256(wheel.read_bytes()) != data["sha256"]:
        return None  # a half-copied or altered wheel is built again
    return WheelBuild(wheel, str(data["sha256"]), str(data["how"]), float(data["seconds"]), cached=True)


def named_source(source: Path | None) -> Path:
    """The archive a build uses: the one named, else $LAB_PYSLURM_SOURCE, else ../shared/vendor's."""
    if source is not None:
        return source
    return Path(os.environ[SOURCE_ENV]) if os.environ.get(SOURCE_ENV) else DEFAULT_ARCHIVE


def ensure_wheel(client: docker.DockerClient, progress: Progress, source: Path | None = None) -> WheelBuild:
    """The cached wheel, else one built from the pinned archive; :class:`PyslurmError` otherwise."""
    hit = cached()
    if hit is not None:
        return hit
    archive = named_source(source)
    verify_archive(archive)

    def waiting(holder: str) -> None:
        progress.say(f"pyslurm's wheel: waiting for {holder}, which is building it")

    with lock.building(cache_dir(), "workload run", waiting):
        if (hit := cached()) is not None:  # the build waited for
            return hit
        try:
            builder = images.build_pyslurm_builder(client, progress)
        except images.ImageBuildError as error:
            raise PyslurmError(f"cannot build pyslurm's toolchain image: {error}") from error
        began = time.monotonic()
        with progress.step(
            f"building pyslurm {versions.PYSLURM_VERSION} from {archive} (pip wheel, Cython 3.0)"
        ):
            name, data = _build(client, builder, archive, progress)
        how = (
            f"pip wheel of {archive} (sha256 {versions.PYSLURM_ARCHIVE_SHA256[:12]}…, tag "
            f"{versions.PYSLURM_VERSION}) against libslurm-dev {versions.SLURM_DEB_VERSION}"
        )
        return store(name, data, how, time.monotonic() - began)


def store(name: str, data: bytes, how: str, seconds: float, root: Path | None = None) -> WheelBuild:
    """Put a built wheel in the cache; the record is written last, so a cut-off copy is not a hit."""
    directory = cache_dir(root)
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / name
    temporary = wheel.with_name(f".{name}.tmp")
    temporary.write_bytes(data)
    temporary.replace(wheel)
    build = WheelBuild(wheel, _sha256(data), how, round(seconds, 1))
    record = {"wheel": name, "sha256": build.sha256, "how": how, "seconds": build.seconds}
    (directory / "build.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return build


def build_command(jobs: int) -> list[str]:
    """What the build container runs: PROVENANCE.md's verified commands, offline, at low priority."""
    prefix = versions.PYSLURM_ARCHIVE_PREFIX
    script = (
        f"set -eu; cd /tmp; tar -xzf {versions.PYSLURM_ARCHIVE}; cd {prefix}; "
        f"SLURM_INCLUDE_DIR={SLURM_INCLUDE_DIR} SLURM_LIB_DIR={SLURM_LIB_DIR} PYSLURM_BUILD_JOBS={jobs} "
        "nice -n 10 python3 -m pip wheel --no-build-isolation --no-deps --no-index "
        "--disable-pip-version-check --verbose -w /tmp/out ."
    )
    return ["bash", "-c", script]


def _build(client: docker.DockerClient, builder: str, archive: Path, progress: Progress) -> tuple[str, bytes]:
    """Run the build in a throwaway container without network; the wheel's file name and bytes."""
    container = client.containers.create(
        builder,
        build_command(os.cpu_count() or 1),
        network_mode="none",
        labels={"org.aifactory-lab.build": "pyslurm"},
    )
    try:
        container.put_archive("/tmp", _tar_of(versions.PYSLURM_ARCHIVE, archive.read_bytes()))
        container.start()
        output: list[str] = []
        follower = threading.Thread(target=_follow, args=(container, output, progress), daemon=True)
        follower.start()
        status = container.wait(timeout=BUILD_TIMEOUT_S)  # the log ends when the container does
        follower.join(timeout=30)
        if status.get("StatusCode") != 0:
            tail = "\n".join(output[-25:])
            raise PyslurmError(
                f"building pyslurm from {archive} failed (exit {status.get('StatusCode')}):\n{tail}\n"
                "Fix: the archive must be the unmodified tag; `lab up --rebuild` remakes the toolchain image."
            )
        return _wheel_from(container)
    except (ReadTimeout, RequestsConnectionError) as error:
        raise PyslurmError(f"building pyslurm took longer than {BUILD_TIMEOUT_S} s") from error
    except DockerException as error:
        raise PyslurmError(f"building pyslurm failed in the container engine: {error}") from error
    finally:
        container.remove(force=True)


def _follow(container: Container, output: list[str], progress: Progress) -> None:
    """Keep the build's output, and say each module Cython and the compiler take up (its progress)."""
    for raw in container.logs(stream=True, follow=True):
        for line in raw.decode("utf-8", "replace").splitlines():
            output.append(line)
            if _STAGES.match(line):
                progress.say(f"  pyslurm: {line.strip()[:100]}")


def _wheel_from(container: Container) -> tuple[str, bytes]:
    stream, _stat = container.get_archive("/tmp/out")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        wheels = [member for member in tar.getmembers() if member.isfile() and member.name.endswith(".whl")]
        if len(wheels) != 1:
            raise PyslurmError(f"the pyslurm build left {len(wheels)} wheels in /tmp/out, not one")
        extracted = tar.extractfile(wheels[0])
        assert extracted is not None
        return Path(wheels[0].name).name, extracted.read()


def _tar_of(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
