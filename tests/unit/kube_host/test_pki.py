"""Per-lab Kubernetes credentials: 0400 files, a CA that signs every identity, names RBAC relies on."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from lab.bringup.keys import KeysError
from lab.kube.identities import IDENTITIES
from lab.kube_host import pki


@pytest.fixture(scope="module")
def creds(tmp_path_factory: pytest.TempPathFactory) -> pki.Credentials:
    return pki.ensure(tmp_path_factory.mktemp("kube") / "keys", ("runai",), "https://127.0.0.1:6443")


def test_every_file_is_0400_in_a_0700_directory(creds: pki.Credentials) -> None:
    assert stat.S_IMODE(creds.directory.stat().st_mode) == 0o700
    files = list(creds.directory.iterdir())
    assert len(files) == 5 + 3 * len(IDENTITIES)  # CA, serving pair, signer pair; 3 per identity
    assert {stat.S_IMODE(f.stat().st_mode) for f in files} == {0o400}


def test_each_identity_is_signed_by_the_lab_ca_with_its_user_and_groups(creds: pki.Credentials) -> None:
    ca = x509.load_pem_x509_certificate(creds.ca.read_bytes())
    for identity in IDENTITIES:
        cert = x509.load_pem_x509_certificate((creds.directory / f"{identity.name}.crt").read_bytes())
        cert.verify_directly_issued_by(ca)
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == identity.user
        groups = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        assert tuple(groups) == identity.groups
    assert pki.IDENTITIES[0].groups == ("system:masters",)


def test_the_serving_certificate_answers_to_loopback_and_the_container(creds: pki.Credentials) -> None:
    cert = x509.load_pem_x509_certificate((creds.directory / "apiserver.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "runai" in sans.get_values_for_type(x509.DNSName)
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    # Python 3.13's strict verification (the container's) needs the authority key identifier.
    cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)


def test_the_users_kubeconfig_points_at_the_host_port(creds: pki.Credentials) -> None:
    document = yaml.safe_load(pki.user_kubeconfig(creds, "https://127.0.0.1:16443"))
    assert document["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:16443"
    assert document["users"][0]["name"] == "admin"


def test_present_credentials_are_kept_and_readable_ones_refused(tmp_path: Path) -> None:
    first = pki.ensure(tmp_path / "k", (), "https://127.0.0.1:6443")
    ca = first.ca.read_bytes()
    assert pki.ensure(tmp_path / "k", (), "https://127.0.0.1:6443").ca.read_bytes() == ca
    (tmp_path / "k" / "admin.key").chmod(0o444)
    with pytest.raises(KeysError, match="chmod 0400"):
        pki.ensure(tmp_path / "k", (), "https://127.0.0.1:6443")
