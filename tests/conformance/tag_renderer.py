"""Build and run dcgm_tag/, the project's program that renders with dcgm-exporter 4.5.3-4.8.2's own code.

The two vendor archives (the tag, and the go-dcgm tree its go.mod requires, which the module proxy
refuses) are sha256-checked and unpacked beside a copy of the program, whose go.mod replaces both
modules with those directories; every other dependency comes from the module proxy at the versions
its go.sum pins (-mod=readonly). The build needs cgo (go-dcgm's C headers), never libdcgm: go-dcgm
dlopens it only when DCGM is initialised, which the program never does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab import versions
from lab.paths import VENDOR_DIR, state_root
from lab.slurm_exporter.binary import go_path

PROGRAM_DIR = Path(__file__).with_name("dcgm_tag")
ARCHIVES = {
    versions.DCGM_EXPORTER_ARCHIVE: versions.DCGM_EXPORTER_ARCHIVE_SHA256,
    versions.GO_DCGM_ARCHIVE: versions.GO_DCGM_ARCHIVE_SHA256,
}


class TagRendererError(RuntimeError):
    """The program could not be built or answered with an error of its own (not the tag's 500)."""


@dataclass(frozen=True)
class TagRendering:
    status: int  # 200, or 500 where the tag's server answers "internal server error"
    body: bytes
    error: str  # what the tag's code returned, for a 500


def _source_key() -> str:
    digest = hashlib.sha256()
    for name in sorted(ARCHIVES.values()):
        digest.update(name.encode())
    for path in sorted(PROGRAM_DIR.iterdir()):
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def build() -> Path:
    """The program's binary, built once per archive and program version (cached under .lab/cache)."""
    work = state_root() / "cache" / f"dcgm-exporter-{versions.DCGM_EXPORTER_TAG}-conformance-{_source_key()}"
    binary = work / "dcgm_tag"
    if binary.exists():
        return binary
    go = go_path()
    if go is None:
        raise TagRendererError("no Go toolchain: install Go (lab doctor says how); the test builds the tag")
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name, expected in ARCHIVES.items():
        archive = VENDOR_DIR / name
        if not archive.is_file():
            raise TagRendererError(f"{archive}: missing; ../shared/vendor/PROVENANCE.md names it")
        with archive.open("rb") as stream:
            actual = hashlib.file_digest(stream, "sha256").hexdigest()
        if actual != expected:
            raise TagRendererError(f"{archive}: sha256 {actual}, expected {expected} (lab/versions.py)")
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
    shutil.copytree(PROGRAM_DIR, work / "dcgm_tag-src")
    env = {**os.environ, "CGO_ENABLED": "1", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly"}
    env.pop("LD_BIND_NOW", None)  # go-dcgm's DCGM symbols stay unresolved until DCGM is loaded
    built = subprocess.run(
        # -trimpath: no build path in the binary or in the build cache's keys, so a build in another clone
        # (each CI run's) takes the compiled packages from the warm cache.
        [go, "build", "-trimpath", "-o", str(binary), "."],
        cwd=work / "dcgm_tag-src",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise TagRendererError(f"go build of {PROGRAM_DIR} against the tag failed:\n{built.stderr[-3000:]}")
    return binary


def render(binary: Path, samples: list[dict[str, Any]], hpc_dir: Path | None = None) -> TagRendering:
    argv = [str(binary), "render"] + (["-hpc", str(hpc_dir)] if hpc_dir else [])
    done = subprocess.run(argv, input=json.dumps(samples).encode(), capture_output=True, check=False)
    if done.returncode == 2:
        # The last stderr line is the error; the HPC mapper's own INFO line comes before it.
        return TagRendering(500, b"", done.stderr.decode(errors="replace").strip().splitlines()[-1])
    if done.returncode != 0:
        raise TagRendererError(f"{' '.join(argv)}: {done.stderr.decode(errors='replace')}")
    return TagRendering(200, done.stdout, "")


def format_values(binary: Path, values: list[int | float]) -> list[str]:
    """The tag's collector strings for int64 (int) and double (float) DCGM values."""
    typed = [{"type": "d", "double": v} if isinstance(v, float) else {"type": "i", "int": v} for v in values]
    done = subprocess.run(
        [str(binary), "format"], input=json.dumps(typed).encode(), capture_output=True, check=False
    )
    if done.returncode != 0:
        raise TagRendererError(f"{binary} format: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode().splitlines()
