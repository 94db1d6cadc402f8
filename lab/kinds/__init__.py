"""Lab kinds (Slurm, Run:ai): load, validate, up, status facts, and attaching to a running lab, over the
one bring-up of :mod:`lab.bringup.lifecycle`. A blueprint says its kind (`kind: slurm | runai`, default
slurm); nothing is guessed from its other keys. :func:`load` gives the kind with its typed model
(:data:`Loaded`), and each kind's `lab up` takes its own options (:class:`SlurmUpOptions`,
:class:`RunaiUpOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from lab.attach import running
from lab.blueprint import strict
from lab.blueprint.runai_blueprint import RunaiBlueprint
from lab.blueprint.slurm_blueprint import Blueprint, BlueprintError
from lab.central import fence_install
from lab.kinds.base import LabKind
from lab.kinds.runai_lab import KIND as RUNAI
from lab.kinds.runai_lab import RunaiKind, RunaiUpOptions
from lab.kinds.slurm_lab import KIND as SLURM
from lab.kinds.slurm_lab import SlurmKind, SlurmUpOptions
from lab.paths import lab_state_dir
from lab.prometheus_ui import install as ui_install
from lab.workload import background

KINDS: dict[str, LabKind[Any, Any]] = {SLURM.name: SLURM, RUNAI.name: RUNAI}


@dataclass(frozen=True)
class SlurmLoaded:
    """A Slurm blueprint, loaded: the kind and its model."""

    kind: SlurmKind
    model: Blueprint

    def summary(self, source: str) -> str:
        return self.kind.summary(self.model, source)


@dataclass(frozen=True)
class RunaiLoaded:
    """A Run:ai blueprint, loaded: the kind and its model."""

    kind: RunaiKind
    model: RunaiBlueprint

    def summary(self, source: str) -> str:
        return self.kind.summary(self.model, source)


Loaded = SlurmLoaded | RunaiLoaded


def kind_of(path: Path) -> LabKind[Any, Any]:
    """The kind a blueprint declares; an unknown one is an error that names the file and the kinds."""
    data = strict.read_mapping(path, "blueprint", "kind, name, …", BlueprintError)
    kind = data.get("kind", SLURM.name)
    if kind not in KINDS:
        raise BlueprintError(f"{path}: kind: {kind!r} is not a lab kind. Fix: use one of {', '.join(KINDS)}.")
    return KINDS[str(kind)]


def load(path: Path) -> Loaded:
    """The blueprint validated by the model of the kind it declares."""
    kind = kind_of(path)
    if kind is RUNAI:
        return RunaiLoaded(RUNAI, RUNAI.load(path))
    assert kind is SLURM, f"kind {kind.name} has no Loaded pair"
    return SlurmLoaded(SLURM, SLURM.load(path))


def facts(lab: str) -> dict[str, str]:
    """The `lab status` lines of the lab's kind; none when it has no recorded blueprint."""
    path = lab_state_dir(lab) / "blueprint.yaml"
    return kind_of(path).facts(lab) if path.exists() else {}


def pending(lab: str) -> list[str]:
    """What still works in the background after `lab up` returned: the web UI's build and install,
    the fence's, the live workload's wait for pyslurm's wheel (`lab status --wait` waits for these)."""
    work = []
    if ui_install.pending(lab):
        work.append("Prometheus' web UI is being built")
    if fence_install.pending(lab):
        work.append("the egress gateway and the centre are being built")
    if background.running_pid(lab) is not None and (phase := background.phase(lab)):
        work.append(f"the live workload is {phase}")
    return work


def attach(client: docker.DockerClient, name: str | None) -> running.RunningLab:
    """The running lab a command means (named, else the only one up), with its recorded blueprint."""
    lab = running.resolve_lab(client, name)
    loaded = load(running.recorded_blueprint(lab))
    return running.attach(client, lab, loaded.kind.name, loaded.model)


__all__ = [
    "KINDS",
    "LabKind",
    "Loaded",
    "RunaiLoaded",
    "RunaiUpOptions",
    "SlurmLoaded",
    "SlurmUpOptions",
    "attach",
    "facts",
    "kind_of",
    "load",
    "pending",
]
