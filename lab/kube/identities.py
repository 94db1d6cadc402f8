"""Who talks to the lab's API server: one client certificate per component (lab.kube_host.pki makes
them, lab.kube.rbac binds them). Standard library only: the container imports it too."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Identity:
    name: str  # file stem and kubeconfig user
    user: str  # certificate CN: the Kubernetes user name
    groups: tuple[str, ...] = ()  # certificate O: the Kubernetes groups


# Who talks to the API server. KAI's components and kwok run as their own users so that RBAC, which
# is on, decides what each may do.
IDENTITIES = (
    Identity("admin", "lab-admin", ("system:masters",)),
    Identity("kube-controller-manager", "system:kube-controller-manager"),
    Identity("kwok", "kwok-controller"),
    Identity("kube-state-metrics", "kube-state-metrics"),
    Identity("kai-scheduler", "kai-scheduler"),
    Identity("kai-binder", "kai-binder"),
    Identity("kai-podgrouper", "kai-podgrouper"),
    Identity("kai-queuecontroller", "kai-queuecontroller"),
    Identity("kai-podgroupcontroller", "kai-podgroupcontroller"),
    Identity("training-operator", "training-operator"),
    Identity("runai-driver", "runai-driver"),
)
