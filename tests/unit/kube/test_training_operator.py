"""What the training operator needs from the cluster: its webhook configuration cut from the tag's
manifest, the hosts line for its DNS name, and its serving certificate written as a secret volume."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import pytest

from lab.kube import training_operator
from lab.kube.api import ApiError

# The shape of the tag's manifests/base/webhook/manifests.yaml (controller-gen output): one
# configuration with a webhook per kind, each reaching the Service kustomize names.
TAG_MANIFEST = """\
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-kubeflow-org-v1-paddlejob}
  failurePolicy: Fail
  name: validator.paddlejob.training-operator.kubeflow.org
  rules:
  - {apiGroups: [kubeflow.org], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [paddlejobs]}
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-kubeflow-org-v1-pytorchjob}
  failurePolicy: Fail
  name: validator.pytorchjob.training-operator.kubeflow.org
  rules:
  - {apiGroups: [kubeflow.org], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [pytorchjobs]}
  sideEffects: None
"""


def test_the_webhook_configuration_keeps_the_tags_pytorchjob_hook_and_reaches_the_operator_by_url() -> None:
    configuration = training_operator.webhook_configuration(TAG_MANIFEST)
    assert configuration["metadata"] == {"name": "validator.training-operator.kubeflow.org"}
    (hook,) = configuration["webhooks"]
    assert hook["name"] == "validator.pytorchjob.training-operator.kubeflow.org"
    assert hook["failurePolicy"] == "Fail" and hook["rules"][0]["resources"] == ["pytorchjobs"]
    assert hook["clientConfig"] == {
        "url": "https://training-operator.kubeflow.svc:9443/validate-kubeflow-org-v1-pytorchjob"
    }


def test_a_manifest_without_the_pytorchjob_hook_is_refused() -> None:
    without = TAG_MANIFEST.replace("pytorchjob", "tfjob")
    with pytest.raises(ValueError, match="expected one webhook for pytorchjobs, found 0"):
        training_operator.webhook_configuration(without)


def test_the_bootstrap_objects_are_the_namespace_the_empty_secret_and_the_configuration() -> None:
    kinds = [
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in training_operator.bootstrap_objects(TAG_MANIFEST)
    ]
    assert kinds == [
        ("Namespace", None, "kubeflow"),
        ("Secret", "kubeflow", "training-operator-webhook-cert"),
        ("ValidatingWebhookConfiguration", None, "validator.training-operator.kubeflow.org"),
    ]


def test_the_hosts_line_is_added_once(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n172.18.0.3 runai\n")
    training_operator.add_hosts_line(hosts)
    training_operator.add_hosts_line(hosts)
    assert hosts.read_text().splitlines()[-1] == "127.0.0.1 training-operator.kubeflow.svc"
    assert hosts.read_text().count("training-operator.kubeflow.svc") == 1
    assert training_operator.hosts_line("# 127.0.0.1 training-operator.kubeflow.svc\n") is not None


class _Secrets:
    """The API server's answer for the operator's Secret, as the cert rotator leaves it."""

    def __init__(self, data: dict[str, str] | None, missing: bool = False) -> None:
        self.data, self.missing = data, missing

    def path(self, kind: str, namespace: str, name: str) -> str:
        return f"{kind}/{namespace}/{name}"

    def get(self, path: str) -> dict[str, Any]:
        assert path == "Secret/kubeflow/training-operator-webhook-cert"
        if self.missing:
            raise ApiError(404, "not found")
        return {"data": self.data} if self.data is not None else {}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_serving_certificate_is_written_once_the_rotator_filled_the_secret(tmp_path: Path) -> None:
    certs = tmp_path / "serving-certs"
    assert not training_operator.project_serving_cert(_Secrets(None), certs)  # type: ignore[arg-type]
    assert not training_operator.project_serving_cert(_Secrets({}, missing=True), certs)  # type: ignore[arg-type]
    assert not certs.exists()
    filled = _Secrets({"ca.crt": _b64("CA"), "tls.crt": _b64("CERT"), "tls.key": _b64("KEY")})
    assert training_operator.project_serving_cert(filled, certs)  # type: ignore[arg-type]
    assert (certs / "tls.crt").read_text() == "CERT" and (certs / "tls.key").read_text() == "KEY"
    assert stat.S_IMODE((certs / "tls.key").stat().st_mode) == 0o600
    assert not (certs / "ca.crt").exists()
