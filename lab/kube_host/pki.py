"""Per-lab Kubernetes credentials: a CA, the API server's serving certificate, one client certificate
per component and the service-account signing key, plus a kubeconfig per identity.

Made once per lab at `lab up` under ``.lab/<lab>/keys/kube/`` (directory 0700, every file 0400), mounted
read-only into the Kubernetes container, never written into an image or the repository. Identities
follow Kubernetes' own conventions (kubernetes.io/docs/setup/best-practices/certificates/): the
controller manager is ``system:kube-controller-manager``, the administrator is in ``system:masters``;
the other components get their own user names, which RBAC binds to their roles (:mod:`lab.kube.rbac`).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lab.bringup.keys import KeysError, refuse_if_readable_by_others
from lab.kube.identities import IDENTITIES

VALID_DAYS = 365  # a lab lives for days; a year keeps a long-lived lab from expiring under its user
CLUSTER = "aifactory-lab"


# Names the serving certificate answers to: loopback for the user's kubectl, the container's host
# name on the lab network for Prometheus and the other containers.
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class Credentials:
    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    def kubeconfig(self, identity: str) -> Path:
        return self.directory / f"{identity}.kubeconfig"


def ensure(directory: Path, server_names: tuple[str, ...], in_container_server: str) -> Credentials:
    """Create what is missing in ``directory``; present files are kept and their modes checked.

    ``server_names``: extra DNS names of the API server (its container). ``in_container_server``: the URL
    the kubeconfigs name, as the components inside the container reach the API server."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    creds = Credentials(directory)
    for existing in directory.iterdir():
        refuse_if_readable_by_others(existing, "a Kubernetes credential")
    if not creds.ca.exists():
        _make_all(directory, server_names, in_container_server)
    return creds


def user_kubeconfig(creds: Credentials, server: str) -> str:
    """The administrator's kubeconfig pointing at ``server`` (the host's loopback port), for the user."""
    text = creds.kubeconfig("admin").read_text(encoding="utf-8")
    document = yaml.safe_load(text)
    document["clusters"][0]["cluster"]["server"] = server
    return yaml.safe_dump(document, sort_keys=False)


def _make_all(directory: Path, server_names: tuple[str, ...], server: str) -> None:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{CLUSTER} CA")])
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(directory / "ca.crt", _pem(ca_cert))
    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in (*SERVING_DNS, *server_names)]
    sans += [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    serving = (
        _builder(_subject("kube-apiserver"), ca_name, serving_key.public_key(), now)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(_authority(ca_key), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_usage(), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    _write(directory / "apiserver.crt", _pem(serving))
    _write(directory / "apiserver.key", _key_pem(serving_key))
    # The service-account token signer (kube-apiserver --service-account-signing-key-file).
    signer = ec.generate_private_key(ec.SECP256R1())
    _write(directory / "service-account.key", _key_pem(signer))
    public = signer.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(directory / "service-account.pub", public)
    ca_pem = _pem(ca_cert).decode("ascii")
    for identity in IDENTITIES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            _builder(_subject(identity.user, identity.groups), ca_name, key.public_key(), now)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(_authority(ca_key), critical=False)
            .add_extension(_usage(), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        _write(directory / f"{identity.name}.crt", _pem(cert))
        _write(directory / f"{identity.name}.key", _key_pem(key))
        config = _kubeconfig(identity.name, server, ca_pem, _pem(cert).decode(), _key_pem(key).decode())
        _write(directory / f"{identity.name}.kubeconfig", config.encode("utf-8"))


def _kubeconfig(name: str, server: str, ca: str, cert: str, key: str) -> str:
    def b64(text: str) -> str:
        return base64.b64encode(text.encode("ascii")).decode("ascii")

    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CLUSTER, "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
        "users": [
            {"name": name, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}
        ],
        "contexts": [{"name": f"{name}@{CLUSTER}", "context": {"cluster": CLUSTER, "user": name}}],
        "current-context": f"{name}@{CLUSTER}",
    }
    return yaml.safe_dump(document, sort_keys=False)


def _subject(common_name: str, groups: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
    return x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # the containers' clocks are the host's
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
    )


def _authority(ca_key: ec.EllipticCurvePrivateKey) -> x509.AuthorityKeyIdentifier:
    # Python 3.13's strict verification (the container's) refuses certificates without it.
    return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())


def _usage(cert_sign: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes) -> None:
    # 0400 from the first byte, as every lab secret (lab.bringup.keys).
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    except FileExistsError as exc:
        raise KeysError(f"{path} exists while the lab's CA does not. Fix: `lab down --purge`.") from exc
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
