"""Lab kinds (Slurm, Run:ai): load, validate, up, status facts, and attaching to a running lab, over the
one bring-up of :mod:`lab.bringup.lifecycle`. A blueprint says its kind (`kind: slurm | runai`, default
slurm); nothing is guessed from its other keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker

from lab.attach import running
from lab.blueprint import strict
from lab.blueprint.slurm_blueprint import BlueprintError
from lab.kinds.base import LabKind, UpOptions
from lab.kinds.runai_lab import KIND as RUNAI
from lab.kinds.slurm_lab import KIND as SLURM
from lab.paths import lab_state_dir

KINDS: dict[str, LabKind] = {SLURM.name: SLURM, RUNAI.name: RUNAI}


def kind_of(path: Path) -> LabKind:
    """The kind a blueprint declares; an unknown one is an error that names the file and the kinds."""
    data = strict.read_mapping(path, "blueprint", "kind, name, …", BlueprintError)
    kind = data.get("kind", SLURM.name)
    if kind not in KINDS:
        raise BlueprintError(f"{path}: kind: {kind!r} is not a lab kind. Fix: use one of {', '.join(KINDS)}.")
    return KINDS[str(kind)]


def load(path: Path) -> tuple[LabKind, Any]:
    kind = kind_of(path)
    return kind, kind.load(path)


def facts(lab: str) -> dict[str, str]:
    """The `lab status` lines of the lab's kind; none when it has no recorded blueprint."""
    path = lab_state_dir(lab) / "blueprint.yaml"
    return kind_of(path).facts(lab) if path.exists() else {}


def attach(client: docker.DockerClient, name: str | None) -> running.RunningLab:
    """The running lab a command means (named, else the only one up), with its recorded blueprint."""
    lab = running.resolve_lab(client, name)
    kind, model = load(running.recorded_blueprint(lab))
    return running.attach(client, lab, kind.name, model)


__all__ = ["KINDS", "LabKind", "UpOptions", "attach", "facts", "kind_of", "load"]
