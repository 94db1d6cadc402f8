"""Kubeflow's training operator in the Run:ai lab's container: what it needs from the cluster before
and while it starts. Standard library and the lab's API client only: the container runs it.

The operator (``cmd/training-operator.v1`` at :data:`lab.versions.TRAINING_OPERATOR_VERSION`) runs
PyTorchJobs: it creates each replica's pod and headless Service and sets the job's conditions. It
leaves ``--gang-scheduler-name`` unset (it knows only volcano and scheduler-plugins), so KAI's
podgrouper makes the gang: one PodGroup per PyTorchJob with minMember = all replicas
(``pkg/podgrouper/podgrouper/plugins/kubeflow`` at KAI v0.13.0).

Its validating webhook is real: the operator's cert rotator (``pkg/cert``) fills the Secret
``kubeflow/training-operator-webhook-cert`` with a CA and a serving certificate for
``training-operator.kubeflow.svc`` and injects the CA into the tag's webhook configuration. Two things
a cluster's nodes and Service network would do are done here instead, because the operator is a
process, not a pod:

- the kubelet's secret volume: the Secret's ``tls.crt`` and ``tls.key`` are written to the
  directory the operator reads (``/tmp/k8s-webhook-server/serving-certs``, fixed in ``pkg/cert``);
- the Service: the webhook's ``clientConfig`` names the operator by URL on that DNS name, which
  ``/etc/hosts`` points at loopback (the API server runs in the same container).
"""

from __future__ import annotations

import base64
from pathlib import Path

from lab import contract
from lab.kube.api import ApiError, Client, Obj, documents

NAMESPACE = "kubeflow"  # pkg/cert defaultOperatorNamespace (MY_POD_NAMESPACE unset)
SERVICE_NAME = "training-operator"  # --webhook-service-name default
SECRET_NAME = "training-operator-webhook-cert"  # --webhook-secret-name default
WEBHOOK_CONFIGURATION = "validator.training-operator.kubeflow.org"  # cmd/training-operator.v1/main.go
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # pkg/cert certDir
DNS_NAME = f"{SERVICE_NAME}.{NAMESPACE}.svc"  # the serving certificate's name (pkg/cert)
# The one kind the lab runs: the operator starts only this controller (--enable-scheme) and only its
# CRD is installed.
SCHEME = "pytorchjob"
HOSTS = Path("/etc/hosts")


def webhook_configuration(tag_manifest: str) -> Obj:
    """The tag's ValidatingWebhookConfiguration (``manifests/base/webhook/manifests.yaml``) with its
    kustomize patch's name, reduced to the PyTorchJob webhook, which reaches the operator by URL."""
    (configuration,) = [
        d for d in documents(tag_manifest) if d.get("kind") == "ValidatingWebhookConfiguration"
    ]
    hooks = [h for h in configuration["webhooks"] if SCHEME + "s" in h["rules"][0]["resources"]]
    if len(hooks) != 1:
        raise ValueError(
            f"the tag's webhook manifest: expected one webhook for {SCHEME}s, found {len(hooks)}"
        )
    (hook,) = hooks
    path = hook["clientConfig"]["service"]["path"]
    hook["clientConfig"] = {"url": f"https://{DNS_NAME}:{contract.TRAINING_OPERATOR_WEBHOOK_PORT}{path}"}
    return {
        "apiVersion": configuration["apiVersion"],
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": [hook],
    }


def bootstrap_objects(tag_manifest: str) -> list[Obj]:
    """What the operator expects before it starts: its namespace, the (empty) Secret its cert rotator
    fills (the rotator may update it, not create it) and the webhook configuration it injects into."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
            "type": "Opaque",
        },
        webhook_configuration(tag_manifest),
    ]


def hosts_line(hosts: str) -> str | None:
    """The line ``/etc/hosts`` needs for the webhook's name, or None when it has it."""
    for line in hosts.splitlines():
        if DNS_NAME in line.split("#", 1)[0].split()[1:]:
            return None
    return f"127.0.0.1 {DNS_NAME}"


def add_hosts_line(hosts: Path = HOSTS) -> None:
    line = hosts_line(hosts.read_text(encoding="utf-8"))
    if line:
        with hosts.open("a", encoding="utf-8") as out:
            out.write(line + "\n")


def project_serving_cert(admin: Client, cert_dir: Path = CERT_DIR) -> bool:
    """Write the Secret's serving certificate and key where the operator reads them, as a kubelet
    mounts a secret volume; True once written (False while the rotator has not filled the Secret)."""
    try:
        secret = admin.get(admin.path("Secret", NAMESPACE, SECRET_NAME))
    except ApiError:
        return False
    data = secret.get("data") or {}
    if not data.get("tls.crt") or not data.get("tls.key"):
        return False
    cert_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name in ("tls.crt", "tls.key"):
        target = cert_dir / name
        target.write_bytes(base64.b64decode(data[name]))
        target.chmod(0o600)
    return True
