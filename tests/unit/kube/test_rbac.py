"""RBAC from the KAI tag's own ClusterRoles, bound to the identities of the lab's certificates."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from lab import versions
from lab.kube import rbac
from lab.kube.identities import IDENTITIES
from lab.kube_host import binaries


@pytest.fixture(scope="module")
def tag_rbac(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kai")
    prefix = f"{versions.KAI_SCHEDULER_ARCHIVE_PREFIX}/deployments/kai-scheduler/templates/rbac/"
    with tarfile.open(binaries.DEFAULT_KAI_ARCHIVE, "r:gz") as tar:
        for component in rbac.KAI_ROLES:
            member = tar.getmember(prefix + f"{component}.yaml")
            (out / f"{component}.yaml").write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    return out


# The shape of the training operator's manifests/base/rbac/role.yaml: one ClusterRole of that name.
OPERATOR_ROLE = """\
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: training-operator
rules:
- apiGroups: [kubeflow.org]
  resources: [pytorchjobs]
  verbs: [get, list, watch, update]
"""


@pytest.fixture(scope="module")
def operator_role(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("training-operator") / "role.yaml"
    path.write_text(OPERATOR_ROLE)
    return path


def test_every_kai_component_gets_the_tags_cluster_role_bound_to_its_user(
    tag_rbac: Path, operator_role: Path
) -> None:
    objects = rbac.objects(tag_rbac, operator_role)
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    bindings = [o for o in objects if o["kind"] == "ClusterRoleBinding"]
    # The tag's names (controller-gen output of v0.13.0), unchanged.
    assert {
        "kai-scheduler",
        "kai-binder",
        "kai-podgrouper",
        "queuecontroller",
        "kai-podgroup-controller",
    } <= set(roles)
    users = {i.user for i in IDENTITIES}
    for binding in bindings:
        (subject,) = binding["subjects"]
        assert subject["kind"] == "User" and subject["name"] in users
        assert binding["roleRef"]["name"] in roles or binding["roleRef"]["name"] == "cluster-admin"
    bound = {b["subjects"][0]["name"]: b["roleRef"]["name"] for b in bindings}
    assert bound["kai-scheduler"] == "kai-scheduler"
    assert bound["kwok-controller"] == "cluster-admin"  # it stands in for every node's kubelet
    assert bound["training-operator"] == "training-operator"  # its module's own ClusterRole, unchanged
    assert roles["training-operator"]["rules"][0]["resources"] == ["pytorchjobs"]


def test_kube_state_metrics_may_only_read(tag_rbac: Path, operator_role: Path) -> None:
    role = next(
        o
        for o in rbac.objects(tag_rbac, operator_role)
        if o["metadata"]["name"] == "lab:kube-state-metrics" and o["kind"] == "ClusterRole"
    )
    assert {v for rule in role["rules"] for v in rule["verbs"]} == {"list", "watch"}
