"""SSH access to machine-like hosts: keys made by the real ssh-keygen, a known_hosts that ssh-keygen
itself reads back, and the wait for sshd against loopback servers that answer (or not) with a banner."""

import socket
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lab.bringup import ssh
from lab.bringup.engine import PrerequisiteError
from lab.bringup.keys import KeysError

HOSTS = ("controller", "dgx-001")
BANNER = b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _public_key(path: Path) -> tuple[str, str]:
    kind, key, *_ = Path(f"{path}.pub").read_text().split()
    return kind, key


class _Server:
    """A loopback TCP server that sends ``greeting`` to every client, listening from ``after_s``."""

    def __init__(self, greeting: bytes, after_s: float = 0.0) -> None:
        self.greeting = greeting
        self.after_s = after_s
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))  # bound but not listening yet: connections are refused
        self.port: int = self.socket.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        if self.stop.wait(self.after_s):
            return
        self.socket.listen()
        self.socket.settimeout(0.1)
        while not self.stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            with connection:
                connection.sendall(self.greeting)


@pytest.fixture
def serve() -> Iterator[Callable[..., _Server]]:
    started: list[_Server] = []

    def start(greeting: bytes, after_s: float = 0.0) -> _Server:
        server = _Server(greeting, after_s)
        server.thread.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop.set()
        server.thread.join(timeout=5)
        server.socket.close()


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_ensure_makes_a_client_key_and_one_host_key_per_host_with_mode_0400(tmp_path: Path) -> None:
    keys = ssh.ensure(tmp_path / "ssh", HOSTS)
    assert _mode(tmp_path / "ssh") == 0o700
    made = [keys.client_key, *(keys.host_key(host) for host in HOSTS)]
    for private in made:
        assert _mode(private) == 0o400
        assert _public_key(private)[0] == "ssh-ed25519"
    assert len({_public_key(private) for private in made}) == len(made)


def test_ensure_names_each_host_key_after_its_host(tmp_path: Path) -> None:
    keys = ssh.ensure(tmp_path / "ssh", HOSTS)
    comment = Path(f"{keys.host_key('dgx-001')}.pub").read_text().split()[2]
    assert comment == "dgx-001"


def test_ensure_keeps_existing_keys_and_adds_a_new_host(tmp_path: Path) -> None:
    first = ssh.ensure(tmp_path / "ssh", ["controller"])
    client, controller = first.client_key.read_bytes(), first.host_key("controller").read_bytes()
    second = ssh.ensure(tmp_path / "ssh", ["controller", "dgx-002"])
    assert second.client_key.read_bytes() == client
    assert second.host_key("controller").read_bytes() == controller
    assert _mode(second.host_key("dgx-002")) == 0o400


def test_a_lost_public_key_is_derived_again_from_its_private_key(tmp_path: Path) -> None:
    keys = ssh.ensure(tmp_path, ["dgx-001"])
    public = Path(f"{keys.host_key('dgx-001')}.pub")
    before = public.read_text().split()[:2]
    public.unlink()
    ssh.ensure(tmp_path, ["dgx-001"])
    assert public.read_text().split()[:2] == before
    ssh.write_known_hosts(keys, {"dgx-001": 2222})
    assert before[1] in keys.known_hosts.read_text()


def test_each_lab_gets_its_own_client_key(tmp_path: Path) -> None:
    one = ssh.ensure(tmp_path / "one", HOSTS)
    two = ssh.ensure(tmp_path / "two", HOSTS)
    assert _public_key(one.client_key) != _public_key(two.client_key)


@pytest.mark.parametrize("which", ["client", "host"])
def test_a_key_others_can_read_is_refused_with_its_file_and_the_fix(tmp_path: Path, which: str) -> None:
    keys = ssh.ensure(tmp_path / "ssh", HOSTS)
    readable = keys.client_key if which == "client" else keys.host_key("dgx-001")
    readable.chmod(0o644)
    with pytest.raises(KeysError, match="chmod 0400") as refused:
        ssh.ensure(tmp_path / "ssh", HOSTS)
    assert str(readable) in str(refused.value)
    assert "0644" in str(refused.value)


@pytest.mark.parametrize("missing", ["ssh", "ssh-keygen"])
def test_ensure_without_the_ssh_client_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    monkeypatch.setattr(ssh.shutil, "which", lambda name: None if name == missing else f"/usr/bin/{name}")
    with pytest.raises(PrerequisiteError, match="apt-get install openssh-client"):
        ssh.ensure(tmp_path / "ssh", HOSTS)
    assert not (tmp_path / "ssh").exists()


def test_binds_mount_the_hosts_own_key_and_the_client_public_key(tmp_path: Path) -> None:
    keys = ssh.ensure(tmp_path / "ssh", HOSTS)
    binds = keys.binds("dgx-001")
    host_key = keys.host_key("dgx-001")
    assert binds == {
        str(host_key): "/etc/ssh/ssh_host_ed25519_key",
        f"{host_key}.pub": "/etc/ssh/ssh_host_ed25519_key.pub",
        f"{keys.client_key}.pub": "/etc/ssh/authorized_keys/root",
    }
    assert all(Path(source).is_file() for source in binds)
    assert str(keys.client_key) not in binds  # the client's private key never enters a host


def test_known_hosts_has_one_line_per_host_that_ssh_keygen_finds(tmp_path: Path) -> None:
    keys = ssh.ensure(tmp_path / "ssh", HOSTS)
    written = ssh.write_known_hosts(keys, {"dgx-001": 32001, "controller": 32000})
    assert written == keys.known_hosts
    assert _mode(written) == 0o600
    lines = written.read_text().splitlines()
    assert lines == [
        "[127.0.0.1]:32000 ssh-ed25519 " + _public_key(keys.host_key("controller"))[1],
        "[127.0.0.1]:32001 ssh-ed25519 " + _public_key(keys.host_key("dgx-001"))[1],
    ]
    for port, host in ((32000, "controller"), (32001, "dgx-001")):
        found = subprocess.run(
            ["ssh-keygen", "-F", f"[127.0.0.1]:{port}", "-f", str(written)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert found.returncode == 0, found.stderr
        assert _public_key(keys.host_key(host))[1] in found.stdout


def test_known_hosts_trusts_no_other_address(tmp_path: Path) -> None:
    keys = ssh.ensure(tmp_path / "ssh", HOSTS)
    written = ssh.write_known_hosts(keys, {"controller": 32000})
    for address in ("[127.0.0.1]:32001", "127.0.0.1", "controller"):
        found = subprocess.run(
            ["ssh-keygen", "-F", address, "-f", str(written)], capture_output=True, text=True, check=False
        )
        assert found.returncode == 1, f"{address}: {found.stdout}"


def test_connection_vars_trust_only_the_labs_known_hosts() -> None:
    keys = ssh.SshKeys(Path("/state/default/keys/ssh"))
    variables = ssh.connection_vars(keys)
    assert variables["ansible_connection"] == "ssh"
    assert variables["ansible_user"] == "root"
    assert variables["ansible_ssh_private_key_file"] == "/state/default/keys/ssh/id_ed25519"
    options = variables["ansible_ssh_common_args"].split()
    assert "UserKnownHostsFile=/state/default/keys/ssh/known_hosts" in options
    assert "StrictHostKeyChecking=yes" in options
    assert "IdentitiesOnly=yes" in options


def test_wait_for_sshd_returns_once_every_host_sends_its_banner(serve: Callable[..., _Server]) -> None:
    controller, node = serve(BANNER), serve(BANNER, after_s=0.7)
    started = time.monotonic()
    ssh.wait_for_sshd({"controller": controller.port, "dgx-001": node.port}, timeout_s=10)
    assert 0.5 < time.monotonic() - started < 5


def test_wait_for_sshd_names_only_the_silent_host(serve: Callable[..., _Server]) -> None:
    answering = serve(BANNER)
    ports = {"controller": answering.port, "dgx-001": _unused_port()}
    started = time.monotonic()
    with pytest.raises(PrerequisiteError, match="journalctl -u ssh") as silent:
        ssh.wait_for_sshd(ports, timeout_s=1.5)
    assert time.monotonic() - started >= 1.5
    assert "on dgx-001." in str(silent.value)
    assert "controller" not in str(silent.value)


def test_a_server_that_is_not_sshd_counts_as_silent(serve: Callable[..., _Server]) -> None:
    web = serve(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with pytest.raises(PrerequisiteError, match="on prometheus"):
        ssh.wait_for_sshd({"prometheus": web.port}, timeout_s=1.5)
