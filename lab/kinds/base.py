"""What every lab kind offers the command line, and the options of `lab up` (each kind reads its own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lab.attach.running import RunningLab
from lab.bringup.images import BuildOptions
from lab.progress import Progress


@dataclass(frozen=True)
class UpOptions:
    build: BuildOptions = field(default_factory=BuildOptions)
    keep_on_failure: bool = False
    exporter: bool = True  # Slurm: the pinned Slurm exporter on the controller
    exporter_source: Path | None = None  # Slurm: its tag archive, when the module proxy refuses the module
    prometheus_ui_source: Path | None = None  # Prometheus' web UI: the tag's web/ui archive to build from
    hosts: str = "container"  # container (lab-daemon) | systemd (machine-like hosts over SSH; Slurm only)
    scenario: str = "baseline"  # Run:ai: the failure mode the driver scripts on the real cluster
    time_scale: float = 1.0  # Run:ai: blueprint seconds per wall second
    seed: int = 0  # Run:ai: seed of arrivals, sizes and run times


class LabKind(Protocol):
    name: str  # the blueprint's `kind:` value
    errors: tuple[type[Exception], ...]  # what its load and up raise for bad input, beside the common ones

    def load(self, path: Path) -> Any: ...

    def summary(self, model: Any, source: str) -> str:
        """The `lab validate` line; raises when the blueprint cannot be used (beyond its schema)."""
        ...

    def up(self, model: Any, source: Path, options: UpOptions, progress: Progress) -> RunningLab: ...

    def up_message(self, model: Any, options: UpOptions) -> str: ...

    def facts(self, name: str) -> dict[str, str]:
        """The kind's own `lab status` lines (between the lab's name and its containers)."""
        ...
