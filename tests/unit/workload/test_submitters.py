"""Which way into Slurm a lab gets: `--submit-via auto` by the Slurm release, and what is refused."""

import pytest

from lab import versions
from lab.workload import submitters
from lab.workload.pyslurm_wheel import PyslurmError

SLURM_24_11 = versions.SLURM_RELEASES["24.11"]
SLURM_26_05 = versions.SLURM_RELEASES["26.05"]


def test_auto_is_pyslurm_where_it_has_a_release_and_slurmrestd_elsewhere() -> None:
    assert submitters.resolve("auto", SLURM_24_11) == "pyslurm"
    assert submitters.resolve("auto", SLURM_26_05) == "slurmrestd"
    assert submitters.resolve("slurmrestd", SLURM_24_11) == "slurmrestd"


def test_pyslurm_on_a_release_without_one_is_refused_with_the_fix() -> None:
    with pytest.raises(PyslurmError, match=r"no release for Slurm 26\.05.*Fix: --submit-via slurmrestd"):
        submitters.resolve("pyslurm", SLURM_26_05)


def test_an_unknown_way_names_the_choices() -> None:
    with pytest.raises(ValueError, match="use one of auto, pyslurm, slurmrestd"):
        submitters.resolve("ssh", SLURM_24_11)
