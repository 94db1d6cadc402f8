"""Security of the running lab: no secret in any image layer, and slurmrestd refusing every token
that is not the caller's own, current one. (Loopback-only ports, key modes and a forged token:
test_foundation.py.)

slurmrestd 24.11.5 runs with SLURM_JWT=daemon: it forwards the token and slurmctld judges it. A
refused token gets HTTP 511 with error 1007 "Protocol authentication error", and slurmctld logs why
(captured on the lab, 2026-12-02): ``auth_p_verify: token expired``; ``auth_p_verify: attempt to
authenticate as alternate user alice from non-SlurmUser bob``; ``initial jwt_decode failure``.
"""

from __future__ import annotations

import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest
from testinfra.host import Host

from lab import contract
from lab.attach import slurmrestd
from lab.blueprint.slurm_blueprint import Blueprint
from lab.bringup import containers
from lab.paths import lab_state_dir

pytestmark = pytest.mark.lab

# Each lab secret's file under .lab/<lab>/keys/, by its name.
SECRET_FILES = {
    "munge.key": "munge.key",
    "jwt_hs256.key": "jwt_hs256.key",
    "mariadb.password": "mariadb.password",
    "hmac-sha256.key": "egress/hmac-sha256.key",  # the egress pseudonyms' key (lab.egress.key)
}
JOBS = f"/slurm/{slurmrestd.API_VERSION}/jobs"


@pytest.fixture(scope="module")
def restd_url(engine: docker.DockerClient, default_lab: Blueprint) -> str:
    restd = containers.find_container(engine, default_lab.name, "restd")
    assert restd is not None
    binding = restd.attrs["NetworkSettings"]["Ports"][f"{contract.SLURMRESTD_PORT}/tcp"][0]
    return f"http://{binding['HostIp']}:{binding['HostPort']}"


def _refused(url: str, credentials: slurmrestd.Credentials) -> list[dict[str, object]]:
    status, body = slurmrestd.request(url, JOBS, credentials)
    assert status == 511, (status, body)
    errors: list[dict[str, object]] = body["errors"]
    assert [e["error_number"] for e in errors] == [1007], errors
    return errors


def _controller_log_since(host: Callable[[str], Host], marker: str) -> str:
    log = host("controller").check_output("cat /var/log/slurm/slurmctld.log")
    return str(log).split(marker, 1)[-1]


def test_an_expired_token_is_refused(
    engine: docker.DockerClient, default_lab: Blueprint, restd_url: str, host: Callable[[str], Host]
) -> None:
    controller = containers.find_container(engine, default_lab.name, "controller")
    token = slurmrestd.issue_token(controller, "alice", 1)
    assert slurmrestd.request(restd_url, JOBS, token)[0] == 200
    issued = time.time()
    while time.time() < issued + 2.5:  # the condition is the clock itself: the token's 1 s lifespan
        time.sleep(0.1)
    _refused(restd_url, token)
    assert "auth_p_verify: token expired" in _controller_log_since(
        host, "created token for alice for 1 seconds"
    )


def test_another_users_token_is_refused(
    engine: docker.DockerClient, default_lab: Blueprint, restd_url: str, host: Callable[[str], Host]
) -> None:
    controller = containers.find_container(engine, default_lab.name, "controller")
    alice = slurmrestd.issue_token(controller, "alice", 300)
    _refused(restd_url, slurmrestd.Credentials("bob", alice.token))
    log = _controller_log_since(host, "created token for alice for 300 seconds")
    assert "attempt to authenticate as alternate user alice from non-SlurmUser bob" in log


def test_a_missing_token_with_a_user_name_is_refused(restd_url: str) -> None:
    _refused(restd_url, slurmrestd.Credentials("alice", ""))


def _new_layers(
    engine: docker.DockerClient, image: str, seen: set[str], scratch: Path
) -> Iterator[tuple[str, tarfile.TarFile]]:
    """(layer name, layer tar) of each layer of ``image`` not in ``seen``, from `docker save`
    streamed to a file (images are 0.5-1 GB: kept off the heap)."""
    saved = scratch / "image.tar"
    with saved.open("wb") as out:
        for chunk in engine.images.get(image).save():
            out.write(chunk)
    with tarfile.open(saved) as archive:
        for member in archive.getmembers():
            if not member.isfile() or member.name in seen:
                continue
            if not (member.name.endswith("layer.tar") or "/sha256/" in member.name):
                continue
            blob = archive.extractfile(member)
            if blob is None or not tarfile.is_tarfile(blob):
                continue  # a config or manifest blob, not a layer
            blob.seek(0)
            seen.add(member.name)
            with tarfile.open(fileobj=blob) as layer:
                yield member.name, layer


def test_no_image_layer_holds_a_lab_secret(
    engine: docker.DockerClient, default_lab: Blueprint, tmp_path: Path
) -> None:
    """Every layer of every role image, opened: no file named as a lab secret, and none whose bytes
    contain this lab's munge key, JWT key, database password or egress key."""
    keys = lab_state_dir(default_lab.name) / "keys"
    secrets = {name: Path(keys, path).read_bytes() for name, path in SECRET_FILES.items()}
    needles = {name: value[:32] for name, value in secrets.items()}
    seen: set[str] = set()
    found: list[str] = []
    for role in ("controller", "dbd", "restd", "node", "prometheus", "fence"):
        for name, layer in _new_layers(engine, contract.role_image(role), seen, tmp_path):
            for member in layer.getmembers():
                if Path(member.name).name in SECRET_FILES:
                    found.append(f"{role} {name}: {member.name}")
                if member.isfile() and member.size < 64 * 1024 * 1024:
                    content = layer.extractfile(member)
                    data = content.read() if content else b""
                    found += [
                        f"{role} {name}: {member.name} holds {k}" for k, v in needles.items() if v in data
                    ]
    assert len(seen) >= 5, seen
    assert not found, found
