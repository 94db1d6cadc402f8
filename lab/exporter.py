"""The pinned Slurm exporter binary: built once from its Go module, cached, then copied to the
controller by provisioning (role slurm_exporter).

`go install github.com/sckyzo/slurm_exporter/cmd/slurm_exporter@v1.8.4` with CGO_ENABLED=0 gives a
static binary; the Go toolchain verifies module checksums. When the build cannot happen (no Go
toolchain, or the module proxy refuses the module) the lab comes up without the exporter and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from lab import versions
from lab.paths import state_root
from lab.progress import Progress

GO_BUILD_TIMEOUT_S = 600


@dataclass(frozen=True)
class ExporterBuild:
    binary: Path | None
    problem: str = ""  # why there is no binary, with the fix


def cached_binary() -> Path:
    return state_root() / "cache" / f"slurm_exporter-{versions.SLURM_EXPORTER_VERSION}"


def ensure_binary(progress: Progress) -> ExporterBuild:
    target = cached_binary()
    if target.is_file():
        return ExporterBuild(target)
    go = shutil.which("go")
    if go is None:
        return ExporterBuild(
            None, "no Go toolchain on PATH. Fix: install Go ≥ 1.26 (go.mod of v1.8.4 says go 1.26.0)"
        )
    module = f"{versions.SLURM_EXPORTER_MODULE}@{versions.SLURM_EXPORTER_VERSION}"
    gobin = target.parent / "gobin"
    gobin.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOBIN": str(gobin), "GOFLAGS": "-trimpath"}
    with progress.step(f"building {module} with {go}"):
        try:
            result = subprocess.run(
                [go, "install", module], env=env, capture_output=True, text=True, timeout=GO_BUILD_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return ExporterBuild(None, f"`go install {module}` took longer than {GO_BUILD_TIMEOUT_S}s")
    if result.returncode != 0:
        reason = result.stderr.strip().splitlines()[-3:] or ["(no output)"]
        return ExporterBuild(
            None,
            f"`go install {module}` failed: {' '.join(reason)}\n"
            "Fix: make the module reachable through GOPROXY, or build it elsewhere and copy the binary to "
            f"{target}",
        )
    shutil.move(str(gobin / "slurm_exporter"), target)
    return ExporterBuild(target)
