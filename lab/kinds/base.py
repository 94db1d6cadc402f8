"""What every lab kind offers the command line. Each kind has its own blueprint model and its own
options of `lab up` (:class:`~lab.kinds.slurm_lab.SlurmUpOptions`,
:class:`~lab.kinds.runai_lab.RunaiUpOptions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, TypeVar

from lab.attach.running import RunningLab
from lab.progress import Progress

Model = TypeVar("Model")
Options = TypeVar("Options", contravariant=True)


class LabKind(Protocol[Model, Options]):
    name: str  # the blueprint's `kind:` value
    errors: tuple[type[Exception], ...]  # what its load and up raise for bad input, beside the common ones

    def load(self, path: Path) -> Model: ...

    def summary(self, model: Model, source: str) -> str:
        """The `lab validate` line; raises when the blueprint cannot be used (beyond its schema)."""
        ...

    def up(self, model: Model, source: Path, options: Options, progress: Progress) -> RunningLab: ...

    def up_message(self, model: Model, options: Options) -> str: ...

    def facts(self, name: str) -> dict[str, str]:
        """The kind's own `lab status` lines (between the lab's name and its containers)."""
        ...
