"""RBAC of the lab's cluster: who may do what (RBAC is on; nobody but the administrator is a master).

- KAI's five components: the tag's own ClusterRoles (controller-gen output in the Helm chart's
  ``templates/rbac/``), bound to the user names of their certificates instead of the chart's service
  accounts (there are no pods for them here).
- Kubeflow's training operator: its module's own ClusterRole (``manifests/base/rbac/role.yaml``), bound to
  its certificate's user instead of the manifests' service account.
- kube-controller-manager: Kubernetes' bootstrap roles (``system:kube-controller-manager`` and, with
  ``--use-service-account-credentials``, one service account per controller) need no binding here.
- kwok stands in for every node's kubelet, which the Node authorizer would confine to its own node;
  one process for all nodes needs more, so it is bound to ``cluster-admin`` (a lab-only deviation).
- kube-state-metrics and the Run:ai driver: the smallest rules their work needs, written here.
"""

from __future__ import annotations

from pathlib import Path

from lab.kube.api import Obj, documents
from lab.kube.identities import IDENTITIES

# Component (tag's rbac/<file>.yaml) -> the identity (lab.kube_host.pki) that runs it.
KAI_ROLES = {
    "scheduler": "kai-scheduler",
    "binder": "kai-binder",
    "podgrouper": "kai-podgrouper",
    "queuecontroller": "kai-queuecontroller",
    "podgroupcontroller": "kai-podgroupcontroller",
}
READ = ["get", "list", "watch"]
LAB_ROLES: dict[str, list[Obj]] = {
    "kube-state-metrics": [
        {"apiGroups": [""], "resources": ["namespaces", "nodes", "pods"], "verbs": ["list", "watch"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "watch"]},
    ],
    # The driver creates the tenancy (namespaces, queues, priority classes, nodes) and the workloads,
    # reads everything it computes the Run:ai series from, labels pods for kwok's failure stage, and
    # puts PodGroups that name no node pool in one (or tells why not in an event), as Run:ai does.
    "runai-driver": [
        {
            "apiGroups": [""],
            "resources": ["namespaces", "nodes", "pods"],
            "verbs": [*READ, "create", "patch", "delete"],
        },
        # nodes/status: the nodes' shape; pods/status: a container an XID killed, as its kubelet writes it.
        {"apiGroups": [""], "resources": ["nodes/status", "pods/status"], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": [*READ, "create"]},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": READ},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": [*READ, "create", "patch", "delete"]},
        {"apiGroups": ["kubeflow.org"], "resources": ["pytorchjobs"], "verbs": [*READ, "create", "delete"]},
        {
            "apiGroups": ["scheduling.k8s.io"],
            "resources": ["priorityclasses"],
            "verbs": [*READ, "create", "patch"],
        },
        {"apiGroups": ["scheduling.run.ai"], "resources": ["queues"], "verbs": [*READ, "create", "patch"]},
        {"apiGroups": ["scheduling.run.ai"], "resources": ["podgroups"], "verbs": [*READ, "patch"]},
        {"apiGroups": ["scheduling.run.ai"], "resources": ["bindrequests"], "verbs": READ},
    ],
}


def user_of(identity: str) -> str:
    return next(i.user for i in IDENTITIES if i.name == identity)


def _binding(name: str, role: str, identity: str) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user_of(identity)}],
    }


def objects(tag_rbac_dir: Path, operator_role: Path) -> list[Obj]:
    """ClusterRoles and bindings for every component, KAI's and the training operator's read from their
    tags' files."""
    out: list[Obj] = []
    for role in documents(operator_role.read_text(encoding="utf-8")):
        if role.get("kind") == "ClusterRole":
            out.append(role)
            out.append(_binding("lab:training-operator", role["metadata"]["name"], "training-operator"))
    for component, identity in KAI_ROLES.items():
        for role in documents((tag_rbac_dir / f"{component}.yaml").read_text(encoding="utf-8")):
            if role.get("kind") != "ClusterRole":
                continue
            out.append(role)
            out.append(_binding(f"lab:{identity}", role["metadata"]["name"], identity))
    for identity, rules in LAB_ROLES.items():
        out.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": f"lab:{identity}"},
                "rules": rules,
            }
        )
        out.append(_binding(f"lab:{identity}", f"lab:{identity}", identity))
    out.append(_binding("lab:kwok", "cluster-admin", "kwok"))
    return out
