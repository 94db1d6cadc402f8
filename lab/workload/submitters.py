"""The runner's ways into a running lab's Slurm: pyslurm (where it has a release for the lab's Slurm)
or slurmrestd.

pyslurm needs its wheel (built once from the pinned tag, :mod:`lab.workload.pyslurm_wheel`) installed
in the controller (:mod:`lab.workload.pyslurm_install`); both are checked on every connect and redone
only when missing or different, so a fresh controller is served again.
"""

from __future__ import annotations

from pathlib import Path

from lab import versions
from lab.attach.running import RunningLab
from lab.progress import Progress
from lab.workload import pyslurm_client, pyslurm_install, pyslurm_wheel
from lab.workload.runner import Submitter
from lab.workload.submit import connect as connect_rest

WAYS = ("auto", "pyslurm", "slurmrestd")
DEFAULT = "auto"  # pyslurm where PySlurm has a release for the lab's Slurm, else slurmrestd


def resolve(via: str, slurm: versions.SlurmRelease) -> str:
    """The way ``via`` names for a lab of ``slurm``: ``auto`` is pyslurm where PySlurm has a release for
    that Slurm (it builds per major.minor), slurmrestd otherwise."""
    if via not in WAYS:
        raise ValueError(f"--submit-via {via!r}: use one of {', '.join(WAYS)}")
    if via == "auto":
        return "pyslurm" if slurm.pyslurm else "slurmrestd"
    if via == "pyslurm" and not slurm.pyslurm:
        raise pyslurm_wheel.PyslurmError(
            f"PySlurm has no release for Slurm {slurm.series} (it builds per Slurm major.minor; "
            "docs/workload.md). Fix: --submit-via slurmrestd (or auto)."
        )
    return via


def prepare_pyslurm(lab: RunningLab, progress: Progress, source: Path | None = None) -> str:
    """The wheel built (or cached) and installed in the lab's controller; the agent's path there."""
    build = pyslurm_wheel.ensure_wheel(lab.client, progress, source)
    if not build.cached:
        progress.say(f"pyslurm {build.wheel.name}: {build.how} in {build.seconds:.0f} s")
    return pyslurm_install.ensure_installed(lab.controller(), build)


def connect(lab: RunningLab, via: str, progress: Progress, source: Path | None = None) -> Submitter:
    """A client of the named way; pyslurm raises :class:`~lab.workload.pyslurm_wheel.PyslurmError`
    with the fix when it cannot be had."""
    if resolve(via, lab.blueprint.slurm.release) == "slurmrestd":
        return connect_rest(lab)
    try:
        agent = prepare_pyslurm(lab, progress, source)
    except pyslurm_wheel.PyslurmError as error:
        raise pyslurm_wheel.PyslurmError(f"{error}\nWithout pyslurm: --submit-via slurmrestd.") from error

    def reinstall() -> None:  # a live workload outlives a controller made anew
        prepare_pyslurm(lab, progress, source)

    return pyslurm_client.PyslurmClient(pyslurm_client.docker_exec(lab.controller().name, agent), reinstall)
