"""The names a lab's egress pseudonymises come from its blueprint, under the labels its `egress:` lists;
the label schemes restated in lab/egress/names.py are the ones the lab makes its objects with."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from lab.blueprint import runai_blueprint, slurm_blueprint
from lab.blueprint.egress_spec import RUNAI_LABELS, SLURM_LABELS
from lab.blueprint.runai_blueprint import DEFAULT_RUNAI_BLUEPRINT, RunaiBlueprint
from lab.blueprint.slurm_blueprint import Blueprint
from lab.egress import names
from lab.kube import manifests, training_operator
from lab.paths import BLUEPRINTS_DIR
from lab.runai import Arrivals


def slurm(data: dict[str, Any] | None = None) -> Blueprint:
    return (
        slurm_blueprint.parse(data)
        if data is not None
        else slurm_blueprint.load(BLUEPRINTS_DIR / "default.yaml")
    )


def runai(data: dict[str, Any] | None = None) -> RunaiBlueprint:
    return runai_blueprint.parse(data) if data is not None else runai_blueprint.load(DEFAULT_RUNAI_BLUEPRINT)


def by_value(found: names.EgressNames) -> dict[str, names.Name]:
    return {name.value: name for name in found.fixed}


def test_a_slurm_labs_users_accounts_and_reservations_users(default_data: dict[str, Any]) -> None:
    found = names.of_blueprint(slurm())
    assert (found.lab, found.kind, found.enabled) == ("default", "slurm", True)
    assert found.labels == ("user", "account", "users")
    values = by_value(found)
    bp = slurm()
    for user in bp.all_users:
        assert values[user.name].labels[0] == "user"
    for account in bp.accounts:
        assert "account" in values[account.name].labels
    assert values["root"].labels == ("user", "account", "users"), "root: a user, an account, a reservation's"
    assert "slurm-exporter" in values and values["slurm-exporter"].sources == ("the lab's own Slurm users",)
    assert found.run_time == ()
    assert not any(node in values for node in bp.nodes.names), "node names stay by default"
    assert not any(p.name in values for p in bp.partitions), "partitions stay by default"


def test_generated_users_are_names_too(default_data: dict[str, Any]) -> None:
    default_data["generated_users"] = {"count": 3, "prefix": "u"}
    assert {"u001", "u002", "u003"} <= set(by_value(names.of_blueprint(slurm(default_data))))


def test_a_reservations_users_are_one_comma_separated_value(default_data: dict[str, Any]) -> None:
    default_data["reservations"] = [
        {"name": "r1", "nodes": "ALL", "start": "now", "duration": "1:00:00", "users": ["alice", "bob"]}
    ]
    values = by_value(names.of_blueprint(slurm(default_data)))
    assert values["alice,bob"].labels == ("users",)


def test_a_site_adds_labels(default_data: dict[str, Any]) -> None:
    default_data["egress"] = {"pseudonymised_labels": ["user", "account", "users", "partition", "node"]}
    bp = slurm(default_data)
    values = by_value(names.of_blueprint(bp))
    assert all(values[p.name].labels == ("partition",) for p in bp.partitions)
    assert all("node" in values[node].labels for node in bp.nodes.names)


def test_a_runai_labs_fixed_names() -> None:
    bp = runai()
    found = names.of_blueprint(bp)
    assert found.kind == "runai"
    values = by_value(found)
    assert values["team-a"].labels == ("project", "queue_name", "label_project", "label_runai_queue")
    assert values["research"].labels == ("department",)
    assert values["runai-team-a"].labels == ("pod_namespace", "namespace", "job_namespace")
    assert values["user-a1"].labels == ("user", "label_user")
    assert set(values["team-c-inference"].labels) == {"queue_name", "label_kai_scheduler_queue"}
    assert values["product-inference"].labels == ("queue_name",)
    assert values["kube-system"].sources == ("Kubernetes' own namespaces",)
    carried = {label for name in found.fixed for label in name.labels}
    assert not carried & {"nodepool", "node", "Hostname"}, "node pools and node names stay by default"


def test_a_runai_labs_names_made_at_run_time() -> None:
    found = names.of_blueprint(runai())
    by_pattern = {made.pattern.split(" ")[0].rstrip(","): made for made in found.run_time}
    train = by_pattern["train-NNNNN"]
    assert train.labels == names.WORKLOAD_LABELS
    assert train.candidates is not None and list(train.candidates(2)) == ["train-00001", "train-00002"]
    job_pods = by_pattern["train-NNNNN-xxxxx"]
    assert set(job_pods.labels) == set(names.POD_LABELS) and not job_pods.revealable
    dist_pods = by_pattern["dist-NNNNN-master-0"]
    assert dist_pods.candidates is not None
    assert list(dist_pods.candidates(1)) == [
        "dist-00001-master-0",
        "dist-00001-worker-0",
        "dist-00001-worker-1",
        "dist-00001-worker-2",
    ]


def test_egress_off_is_said() -> None:
    data = runai().model_dump()
    data["egress"] = {"enabled": False}
    assert names.of_blueprint(runai(data)).enabled is False


@pytest.mark.parametrize(("catalogue", "kind"), [(SLURM_LABELS, "slurm"), (RUNAI_LABELS, "runai")])
def test_every_label_a_blueprint_may_list_has_names(catalogue: dict[str, str], kind: str) -> None:
    """A label the spec allows and nothing here fills would be pseudonymised and never revealed."""
    if kind == "slurm":
        data = slurm().model_dump()
        data["reservations"] = [{"name": "r", "nodes": "ALL", "start": "now", "duration": "1:00:00"}]
        data["egress"] = {"pseudonymised_labels": list(catalogue)}
        found = names.of_blueprint(slurm(data))
    else:
        data = runai().model_dump()
        data["egress"] = {"pseudonymised_labels": list(catalogue)}
        found = names.of_blueprint(runai(data))
    filled = {label for name in found.fixed for label in name.labels}
    filled |= {label for made in found.run_time for label in made.labels}
    assert filled == set(catalogue)


def test_the_schemes_are_the_labs_own() -> None:
    bp = runai()
    assert names.namespace_of("team-a") == manifests.namespace_of("team-a")
    assert names.queue_of("team-a", "default") == manifests.queue_name("team-a", "default")
    assert training_operator.NAMESPACE in names.KUBERNETES_OWN_NAMESPACES
    queues = {queue["metadata"]["name"] for queue in manifests.queues(bp)}
    assert queues <= set(by_value(names.of_blueprint(bp))), "every KAI queue the lab makes is a name"
    arrivals = Arrivals(bp, random.Random(0))
    first, second = (arrivals.make(bp.workload_class(name), 0.0) for name in ("dist", "train"))
    assert (first.name, second.name) == (names.workload_of("dist", 1), names.workload_of("train", 2))
    assert first.namespace == names.namespace_of(first.project)
    pod_labels = manifests.job(bp, second, 1.0)["spec"]["template"]["metadata"]["labels"]
    assert pod_labels[manifests.QUEUE_LABEL] in by_value(names.of_blueprint(bp))


def test_replicas_are_named_as_the_training_operator_names_them() -> None:
    # tests/lab/test_runai.py: a 4-pod PyTorchJob `gang-fits` has these pods in a running lab.
    assert names.replicas_of("gang-fits", 4) == [
        "gang-fits-master-0",
        "gang-fits-worker-0",
        "gang-fits-worker-1",
        "gang-fits-worker-2",
    ]


def test_every_name_in_text_is_matched_whole_as_its_label_value_is_pseudonymised() -> None:
    """A name in a log line gets the pseudonym its label value gets only when it is matched whole: a pod
    before its workload, a queue before its project."""
    model = runai_blueprint.load(DEFAULT_RUNAI_BLUEPRINT)
    pattern = re.compile(names.in_text(model))
    made = ["train-00001", "train-00001-ftgr7", "dist-00002-master-0", "dist-00002-worker-6"]
    for value in [*(n.value for n in names.of_blueprint(model).fixed), *made]:
        if value in names.KUBERNETES_OWN_NAMESPACES:
            assert not pattern.search(value), value
            continue
        assert [m.group(0) for m in pattern.finditer(f"<{value}>")] == [value], value
    line = "task <runai-team-a/train-00001-ftgr7> pg-train-00001-ftgr7-38163 queue <team-a-default> dgx-001"
    found = [m.group(0) for m in pattern.finditer(line)]
    assert found == ["runai-team-a", "train-00001-ftgr7", "train-00001-ftgr7", "team-a-default"]


def test_kais_lines_that_cross_name_an_object_of_a_projects_namespace() -> None:
    pattern = re.compile(names.namespaces_in_text(runai_blueprint.load(DEFAULT_RUNAI_BLUEPRINT)))
    assert pattern.search("Attempting to allocate job: <runai-team-a/pg-train-00001-ftgr7-3816> of queue")
    assert pattern.search('Binding pod\t{"namespace": "runai-team-b", "name": "train-00003-abcde"}')
    assert not pattern.search("Resource division result for queue <team-a>: Queue Priority: <100>")
    assert not pattern.search("[allocate] Enter Allocate ...")
    assert not pattern.search("namespace runai-team-ab")  # not a project's
