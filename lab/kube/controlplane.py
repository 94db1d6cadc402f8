"""The Kubernetes control plane of a Run:ai lab, run inside its container by ``python3 -m lab.kube
control-plane``: etcd, kube-apiserver, kube-controller-manager, kwok, KAI Scheduler (one scheduler per
node pool, binder, podgrouper, queue controller, podgroup controller), kube-state-metrics and Kubeflow's
training operator (:mod:`lab.kube.training_operator`).

Every start is a new cluster (etcd's data directory is emptied), so a scenario always begins from
the same state. Processes start in dependency order, each waited for until it answers; the tag's CRDs
and the components' RBAC are applied before KAI starts. If any process exits, the others are stopped
and the supervisor exits non-zero (``lab-daemon check`` then reports it). Logs: ``<out>/logs/<name>.log``.

Ports (inside the container; only the API server is published, on the host's 127.0.0.1) are the
contract's (:data:`lab.contract.KUBE_PORTS` and its neighbours). etcd and the controller manager
listen on loopback only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lab import contract
from lab.kube import rbac, training_operator
from lab.kube.api import Client, documents, wait_until
from lab.kube.stages import POD_TERMINATE

PKI = Path(contract.KUBE_PKI_MOUNT)  # the lab's credentials, read-only (lab.kube_host.pki)
BIN = Path(contract.KUBE_BUILD_MOUNT) / "bin"  # the cached build, read-only (lab.kube_host.binaries)
ETCD_DATA = Path("/var/lib/aifactory-lab/etcd")
NODE_ANNOTATION = "kwok.x-k8s.io/node=fake"  # kwok manages the nodes that carry it (kwok docs)
ETCD_URL = f"http://127.0.0.1:{contract.ETCD_CLIENT_PORT}"
# The pod and node labels kube-state-metrics exposes on kube_pod_labels / kube_node_labels: the queue,
# node pool, Run:ai project and user (kube-state-metrics drops labels not allowed explicitly).
KSM_LABELS = (
    "pods=[kai.scheduler/queue,kai.scheduler/node-pool,project,user,runai/queue],"
    "nodes=[kai.scheduler/node-pool]"
)
READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Process:
    name: str
    argv: tuple[str, ...]
    ready_url: str | None = None  # polled until it answers 200 (https with the lab's CA)
    env: dict[str, str] = field(default_factory=dict)


def processes(pools: list[str], verbosity: int) -> list[Process]:
    """Every process in start order (pure: the argv is what the unit tests check)."""

    def kubeconfig(identity: str) -> dict[str, str]:
        return {"KUBECONFIG": str(PKI / f"{identity}.kubeconfig")}

    names = ("ca.crt", "apiserver.crt", "apiserver.key", "service-account.key", "service-account.pub")
    pki = {n: str(PKI / n) for n in names}
    procs = [
        Process(
            "etcd",
            (
                "etcd",
                "--name=lab",
                f"--data-dir={ETCD_DATA}",
                f"--listen-client-urls={ETCD_URL}",
                f"--advertise-client-urls={ETCD_URL}",
                f"--listen-peer-urls=http://127.0.0.1:{contract.ETCD_PEER_PORT}",
                "--log-level=warn",
            ),
            f"{ETCD_URL}/health",
        ),
        Process(
            "kube-apiserver",
            (
                str(BIN / "kube-apiserver"),
                f"--etcd-servers={ETCD_URL}",
                "--bind-address=0.0.0.0",
                f"--secure-port={contract.KUBE_PORTS['kube-apiserver']}",
                f"--tls-cert-file={pki['apiserver.crt']}",
                f"--tls-private-key-file={pki['apiserver.key']}",
                f"--client-ca-file={pki['ca.crt']}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-account-key-file={pki['service-account.pub']}",
                f"--service-account-signing-key-file={pki['service-account.key']}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=false",
                "--profiling=false",
                "--endpoint-reconciler-type=none",
            ),
        ),
        Process(
            "kube-controller-manager",
            (
                str(BIN / "kube-controller-manager"),
                f"--kubeconfig={PKI / 'kube-controller-manager.kubeconfig'}",
                f"--authentication-kubeconfig={PKI / 'kube-controller-manager.kubeconfig'}",
                f"--authorization-kubeconfig={PKI / 'kube-controller-manager.kubeconfig'}",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki['service-account.key']}",
                f"--root-ca-file={pki['ca.crt']}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                "--profiling=false",
                "--controllers=*,-bootstrapsigner,-tokencleaner",
            ),
        ),
        Process(
            "kwok",
            (
                str(BIN / "kwok"),
                f"--kubeconfig={PKI / 'kwok.kubeconfig'}",
                f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}",
                "--config=/run/kwok/stages.yaml",
                f"--server-address=0.0.0.0:{contract.KUBE_PORTS['kwok']}",
                "--node-lease-duration-seconds=40",
            ),
        ),
        Process(
            "kube-state-metrics",
            (
                str(BIN / "kube-state-metrics"),
                f"--kubeconfig={PKI / 'kube-state-metrics.kubeconfig'}",
                "--host=0.0.0.0",
                f"--port={contract.KUBE_PORTS['kube-state-metrics']}",
                "--telemetry-host=127.0.0.1",
                f"--telemetry-port={contract.KUBE_HEALTH_PORTS['kube-state-metrics']}",
                "--resources=namespaces,nodes,pods,jobs",
                f"--metric-labels-allowlist={KSM_LABELS}",
            ),
            f"http://127.0.0.1:{contract.KUBE_PORTS['kube-state-metrics']}/healthz",
        ),
    ]
    for index, pool in enumerate(pools):
        procs.append(
            Process(
                f"kai-scheduler-{pool}",
                (
                    str(BIN / "kai-scheduler"),
                    "--scheduler-name=kai-scheduler",
                    f"--partition-label-value={pool}",
                    f"--listen-address=:{contract.kai_scheduler_port(index)}",
                    f"--plugin-server-port={contract.kai_scheduler_plugin_port(index)}",
                    f"--v={verbosity}",
                    "--update-pod-eviction-condition=true",
                    "--leader-elect=false",
                ),
                f"http://127.0.0.1:{contract.kai_scheduler_port(index)}/metrics",
                kubeconfig("kai-scheduler"),
            )
        )
    procs += [
        Process(
            "kai-binder",
            (
                str(BIN / "kai-binder"),
                f"--metrics-bind-address=:{contract.KUBE_PORTS['kai-binder']}",
                f"--health-probe-bind-address=:{contract.KUBE_HEALTH_PORTS['kai-binder']}",
            ),
            f"http://127.0.0.1:{contract.KUBE_PORTS['kai-binder']}/metrics",
            kubeconfig("kai-binder"),
        ),
        Process(
            "kai-podgrouper",
            (
                str(BIN / "kai-podgrouper"),
                f"--metrics-bind-address=:{contract.KUBE_PORTS['kai-podgrouper']}",
                f"--health-probe-bind-address=:{contract.KUBE_HEALTH_PORTS['kai-podgrouper']}",
            ),
            f"http://127.0.0.1:{contract.KUBE_PORTS['kai-podgrouper']}/metrics",
            kubeconfig("kai-podgrouper"),
        ),
        Process(
            "kai-queuecontroller",
            (
                str(BIN / "kai-queuecontroller"),
                "--enable-webhook=false",
                f"--metrics-listen-address=:{contract.KUBE_PORTS['kai-queuecontroller']}",
            ),
            None,
            kubeconfig("kai-queuecontroller"),
        ),
        Process(
            "kai-podgroupcontroller",
            (
                str(BIN / "kai-podgroupcontroller"),
                "--enable-podgroup-webhook=false",
                f"--health-probe-bind-address=:{contract.KUBE_HEALTH_PORTS['kai-podgroupcontroller']}",
            ),
            f"http://127.0.0.1:{contract.KUBE_HEALTH_PORTS['kai-podgroupcontroller']}/readyz",
            kubeconfig("kai-podgroupcontroller"),
        ),
        Process(
            "training-operator",
            (
                str(BIN / "training-operator"),
                f"--enable-scheme={training_operator.SCHEME}",
                f"--metrics-bind-address=:{contract.KUBE_PORTS['training-operator']}",
                f"--health-probe-bind-address=:{contract.KUBE_HEALTH_PORTS['training-operator']}",
                f"--webhook-server-port={contract.TRAINING_OPERATOR_WEBHOOK_PORT}",
            ),
            # ready once its certificates are in place and its webhook server listens (cmd/.../main.go)
            f"http://127.0.0.1:{contract.KUBE_HEALTH_PORTS['training-operator']}/readyz",
            kubeconfig("training-operator"),
        ),
    ]
    return procs


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _wait_for(proc: Process, child: subprocess.Popen[bytes], admin: Client, log_dir: Path) -> None:
    """Until ``proc`` answers (the API server: then the bootstrap); an exit on the way is an error."""

    def alive() -> bool:
        if child.poll() is not None:
            raise RuntimeError(f"{proc.name} exited with {child.returncode} (see {log_dir}/{proc.name}.log)")
        return True

    def check(answers: Callable[[], bool]) -> Callable[[], bool]:
        return lambda: alive() and answers()

    if proc.name == "kube-apiserver":
        wait_until(check(admin.ready), READY_TIMEOUT_S, "kube-apiserver /readyz")
        _bootstrap(admin)
        return
    if proc.name == "training-operator":
        projected = check(lambda: training_operator.project_serving_cert(admin))
        wait_until(projected, READY_TIMEOUT_S, "the training operator's serving certificate in its Secret")
    if proc.ready_url:
        url = proc.ready_url
        wait_until(check(lambda: answers(url)), READY_TIMEOUT_S, f"{proc.name} {url}")
    else:
        time.sleep(1.0)  # no readiness endpoint: at least it did not exit at once
        alive()


def _bootstrap(admin: Client) -> None:
    """What KAI and the training operator need before they start: the tags' CRDs, established, every
    component's RBAC, and the operator's namespace, Secret and webhook configuration."""
    operator = BIN.parent / "training-operator"
    crds = [
        *sorted((BIN.parent / "kai" / "crds").glob("*.yaml")),
        *sorted((operator / "crds").glob("*.yaml")),
    ]
    for crd in crds:
        for obj in documents(crd.read_text(encoding="utf-8")):
            admin.apply(obj)
    for obj in rbac.objects(BIN.parent / "kai" / "rbac", operator / "rbac" / "role.yaml"):
        admin.apply(obj)
    webhooks = (operator / "webhook" / "manifests.yaml").read_text(encoding="utf-8")
    for obj in training_operator.bootstrap_objects(webhooks):
        admin.apply(obj)
    training_operator.add_hosts_line()

    def established() -> bool:
        crds = admin.list("CustomResourceDefinition")
        groups = ("scheduling.run.ai", "kai.scheduler", "kubeflow.org")
        ours = [c for c in crds if c["spec"]["group"] in groups]
        return bool(ours) and all(
            any(
                c["type"] == "Established" and c["status"] == "True"
                for c in crd.get("status", {}).get("conditions", [])
            )
            for crd in ours
        )

    wait_until(established, READY_TIMEOUT_S, "KAI's and the training operator's CRDs established")


def _write_kwok_config() -> None:
    out = Path("/run/kwok")
    out.mkdir(parents=True, exist_ok=True)
    stages = sorted((BIN.parent / "stages").glob("*.yaml"))
    texts = [s.read_text(encoding="utf-8").strip() for s in stages] + [POD_TERMINATE.strip()]
    (out / "stages.yaml").write_text("\n---\n".join(texts) + "\n")


def run(pools: list[str], verbosity: int, log_dir: Path) -> int:
    """Start everything, then wait; returns the exit status when a process ends or on SIGTERM."""
    if ETCD_DATA.exists():
        shutil.rmtree(ETCD_DATA)
    ETCD_DATA.mkdir(parents=True, mode=0o700)
    log_dir.mkdir(parents=True, exist_ok=True)
    _write_kwok_config()
    running: list[tuple[Process, subprocess.Popen[bytes]]] = []

    def stop(*_: object) -> None:
        raise SystemExit(0)  # wherever it waits: the finally below stops every child

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    admin = Client(
        PKI / "admin.kubeconfig", server=f"https://127.0.0.1:{contract.KUBE_PORTS['kube-apiserver']}"
    )
    try:
        for proc in processes(pools, verbosity):
            log = (log_dir / f"{proc.name}.log").open("wb")  # a new cluster's log
            child = subprocess.Popen(
                proc.argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **proc.env}
            )
            running.append((proc, child))
            _say(f"started {proc.name} (pid {child.pid})")
            _wait_for(proc, child, admin, log_dir)
        _say("control plane up")
        (log_dir / "control-plane.json").write_text(json.dumps({"up_at": time.time()}) + "\n")
        while True:
            for proc, child in running:
                if child.poll() is not None:
                    _say(f"{proc.name} exited with {child.returncode}")
                    return 1
            time.sleep(1.0)
    except (RuntimeError, TimeoutError) as error:
        _say(f"control plane failed: {error}")
        return 1
    finally:
        for _, child in reversed(running):
            if child.poll() is None:
                child.terminate()
        for _, child in running:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()


def _say(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}", file=sys.stderr, flush=True)
