"""What the command groups share: the --blueprint and --lab options, the errors a command reports as one
line (exit 1) instead of a traceback, and that report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import docker
import typer

from lab.attach import running
from lab.blueprint.runai_blueprint import RunaiBlueprintError
from lab.blueprint.slurm_blueprint import BlueprintError
from lab.bringup import engine, images, keys, lock
from lab.slurm_exporter.binary import ExporterError

BlueprintOption = Annotated[
    Path,
    typer.Option("--blueprint", "-b", help="Blueprint YAML (see blueprints/).", show_default=True),
]
LabOption = Annotated[
    str | None,
    typer.Option("--lab", help="Lab name (the blueprint's `name`); default: the only lab that is up."),
]

KNOWN_ERRORS = (
    docker.errors.DockerException,
    BlueprintError,
    engine.PrerequisiteError,
    images.ImageBuildError,
    keys.KeysError,
    running.LabError,
    RunaiBlueprintError,
    lock.LabBusyError,
    ExporterError,
)


def fail(error: object) -> NoReturn:
    """Print ``error: …`` in red on stderr and exit 1."""
    typer.secho(f"error: {error}", fg=typer.colors.RED, err=True)
    raise typer.Exit(1)
