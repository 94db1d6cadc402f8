"""Reveal recomputes the keyed hash over a lab's names: fixed names first, then workload and replica
names made at run time up to a bound; another key or a name that is not the lab's finds nothing."""

from __future__ import annotations

from lab.blueprint import runai_blueprint, slurm_blueprint
from lab.egress import names
from lab.egress.pseudonyms import pseudonym
from lab.egress.reveal import reveal
from lab.paths import BLUEPRINTS_DIR

KEY = b"0123456789abcdef" * 4
RUNAI = names.of_blueprint(runai_blueprint.load(runai_blueprint.DEFAULT_RUNAI_BLUEPRINT))
SLURM = names.of_blueprint(slurm_blueprint.load(BLUEPRINTS_DIR / "default.yaml"))


def test_a_fixed_name_is_revealed_with_its_labels() -> None:
    search = reveal(KEY, pseudonym(KEY, "alice"), SLURM, up_to=10)
    assert search.found is not None
    assert (search.found.value, search.found.labels) == ("alice", ("user",))
    assert search.run_time_tried == 0


def test_a_namespace_is_revealed() -> None:
    search = reveal(KEY, pseudonym(KEY, "runai-team-b"), RUNAI, up_to=10)
    assert search.found is not None and search.found.value == "runai-team-b"


def test_a_workload_made_at_run_time_is_revealed_within_the_bound() -> None:
    search = reveal(KEY, pseudonym(KEY, "build-00042"), RUNAI, up_to=100)
    assert search.found is not None
    assert search.found.value == "build-00042"
    assert search.found.labels == names.WORKLOAD_LABELS
    assert search.found.sources == ("workloads of class build",)
    assert reveal(KEY, pseudonym(KEY, "build-00042"), RUNAI, up_to=41).found is None


def test_a_distributed_workloads_pod_is_revealed() -> None:
    search = reveal(KEY, pseudonym(KEY, "dist-00007-worker-2"), RUNAI, up_to=10)
    assert search.found is not None and set(search.found.labels) == set(names.POD_LABELS)


def test_another_key_reveals_nothing() -> None:
    search = reveal(b"f" * 64, pseudonym(KEY, "alice"), SLURM, up_to=10)
    assert search.found is None
    assert search.fixed_tried == len(SLURM.fixed)


def test_a_name_that_is_not_the_labs_reveals_nothing() -> None:
    search = reveal(KEY, pseudonym(KEY, "train-00001-ftgr7"), RUNAI, up_to=3)
    assert search.found is None
    revealable = [made for made in RUNAI.run_time if made.revealable]
    per_number = sum(1 if made.labels == names.WORKLOAD_LABELS else 4 for made in revealable)
    assert search.run_time_tried == 3 * per_number
