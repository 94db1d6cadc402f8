"""The control plane's processes: order, flags that make it safe (RBAC, loopback etcd), KAI per pool."""

from __future__ import annotations

import re

import yaml

from lab import contract
from lab.kube import controlplane
from lab.kube.stages import POD_TERMINATE

PROCS = controlplane.processes(["default", "inference"], verbosity=3)
BY_NAME = {p.name: p for p in PROCS}


def test_processes_start_in_dependency_order() -> None:
    names = [p.name for p in PROCS]
    assert names[:3] == ["etcd", "kube-apiserver", "kube-controller-manager"]
    assert names.index("kwok") < names.index("kai-scheduler-default")
    assert {"kai-binder", "kai-podgrouper", "kai-queuecontroller", "kai-podgroupcontroller"} <= set(names)


def test_etcd_and_the_controller_manager_listen_on_loopback_only_and_rbac_is_on() -> None:
    assert "--listen-client-urls=http://127.0.0.1:2379" in BY_NAME["etcd"].argv
    assert "--bind-address=127.0.0.1" in BY_NAME["kube-controller-manager"].argv
    api = BY_NAME["kube-apiserver"].argv
    assert "--authorization-mode=RBAC" in api
    assert not any(a.startswith("--insecure") or a.startswith("--anonymous-auth=true") for a in api)


def test_one_kai_scheduler_per_node_pool_each_on_its_own_ports() -> None:
    default, inference = BY_NAME["kai-scheduler-default"], BY_NAME["kai-scheduler-inference"]
    assert "--partition-label-value=default" in default.argv
    assert "--partition-label-value=inference" in inference.argv
    assert "--listen-address=:8180" in default.argv and "--listen-address=:8181" in inference.argv
    assert "--update-pod-eviction-condition=true" in default.argv  # the Job replaces reclaimed pods
    assert default.env == {"KUBECONFIG": "/etc/kubernetes/pki/kai-scheduler.kubeconfig"}


def test_webhooks_are_off_and_every_listening_port_is_the_contracts_and_distinct() -> None:
    assert "--enable-webhook=false" in BY_NAME["kai-queuecontroller"].argv
    assert "--enable-podgroup-webhook=false" in BY_NAME["kai-podgroupcontroller"].argv
    listening = {
        int(found[2])
        for proc in PROCS
        for arg in proc.argv
        if (found := re.fullmatch(r"--([a-z-]+)=(?:\S*:)?(\d+)", arg))
        and found[1].rsplit("-", 1)[-1] in ("port", "address", "urls")
        and not found[1].startswith("advertise")
    }
    ports = [
        *contract.KUBE_PORTS.values(),
        *contract.KUBE_HEALTH_PORTS.values(),
        contract.ETCD_CLIENT_PORT,
        contract.ETCD_PEER_PORT,
        contract.TRAINING_OPERATOR_WEBHOOK_PORT,
        *(contract.kai_scheduler_port(i) for i in range(2)),
        *(contract.kai_scheduler_plugin_port(i) for i in range(2)),
    ]
    assert len(ports) == len(set(ports))
    # every port a process is told to listen on is one of the contract's (the podgroup controller's
    # metrics port is its default, which no flag names)
    assert listening == set(ports) - {contract.KUBE_PORTS["kai-podgroupcontroller"]}


def test_the_labs_own_kwok_stage_terminates_deleted_pods() -> None:
    stage = yaml.safe_load(POD_TERMINATE)
    assert stage["kind"] == "Stage" and stage["apiVersion"] == "kwok.x-k8s.io/v1alpha1"
    keys = {e["key"] for e in stage["spec"]["selector"]["matchExpressions"]}
    assert ".metadata.deletionTimestamp" in keys
    assert "phase: Failed" in stage["spec"]["next"]["statusTemplate"]
