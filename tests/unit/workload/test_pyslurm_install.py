"""pyslurm into the controller: the wheel unpacked under site/ beside the agent, readable by every plan
user, done once per wheel and agent (a marker written last), and a wheel that is not one refused."""

from __future__ import annotations

import io
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lab.workload import pyslurm_install
from lab.workload.pyslurm_wheel import PyslurmError, WheelBuild


def _wheel(tmp_path: Path, members: dict[str, bytes]) -> WheelBuild:
    path = tmp_path / "pyslurm-24.11.0-cp313-cp313-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return WheelBuild(path, "ab" * 32, "built", 1.0)


def test_the_wheel_goes_under_site_beside_the_agent(tmp_path: Path) -> None:
    build = _wheel(tmp_path, {"pyslurm/__init__.py": b"x", "pyslurm/core/job/job.so": b"\x7fELF"})
    with tarfile.open(fileobj=io.BytesIO(pyslurm_install.install_tar(build.wheel, b"agent"))) as tar:
        members = {member.name: member for member in tar.getmembers()}
    assert {name for name, member in members.items() if member.isfile()} == {
        "pyslurm-24.11.0/pyslurm_agent.py",
        "pyslurm-24.11.0/site/pyslurm/__init__.py",
        "pyslurm-24.11.0/site/pyslurm/core/job/job.so",
    }
    assert all(m.mode == (0o755 if m.isdir() else 0o644) and m.uid == 0 for m in members.values())


@pytest.mark.parametrize("member", ["../evil.py", "/etc/passwd"])
def test_a_member_outside_the_wheel_is_refused(tmp_path: Path, member: str) -> None:
    build = _wheel(tmp_path, {member: b"x"})
    with pytest.raises(PyslurmError, match="points outside the wheel"):
        pyslurm_install.install_tar(build.wheel, b"agent")


def test_a_file_that_is_not_a_wheel_names_itself_and_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "broken.whl"
    bad.write_bytes(b"cut off")
    with pytest.raises(PyslurmError, match=r"broken.whl is not a wheel .* Fix: delete it"):
        pyslurm_install.install_tar(bad, b"agent")


@dataclass
class _Result:
    exit_code: int
    output: bytes


@dataclass
class FakeController:
    name: str = "lab-default-controller"
    files: dict[str, bytes] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def exec_run(self, argv: list[str]) -> _Result:
        self.calls.append(" ".join(argv))
        if argv[0] == "cat":
            found = self.files.get(argv[1])
            return _Result(0, found) if found is not None else _Result(1, b"No such file")
        if argv[:2] == ["rm", "-rf"]:
            self.files = {k: v for k, v in self.files.items() if not k.startswith(argv[2])}
        return _Result(0, b"")

    def put_archive(self, path: str, data: bytes) -> bool:
        self.calls.append(f"put {path}")
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for member in tar.getmembers():
                extracted = tar.extractfile(member) if member.isfile() else None
                if extracted is not None:
                    self.files[f"{path}/{member.name}"] = extracted.read()
        return True


def test_the_install_is_done_once_and_redone_for_another_wheel(tmp_path: Path) -> None:
    controller = FakeController()
    build = _wheel(tmp_path, {"pyslurm/__init__.py": b"x"})
    agent = pyslurm_install.ensure_installed(controller, build)  # type: ignore[arg-type]
    assert agent == pyslurm_install.AGENT and agent in controller.files
    assert controller.calls[-1] == f"put {pyslurm_install.INSTALL_DIR}", "the marker is written last"
    marker = controller.files[pyslurm_install.MARKER].decode()
    assert marker.startswith(f"wheel {build.wheel.name} sha256 abab")
    before = len(controller.calls)
    pyslurm_install.ensure_installed(controller, build)  # type: ignore[arg-type]
    assert controller.calls[before:] == [f"cat {pyslurm_install.MARKER}"], "nothing is copied again"
    other = WheelBuild(build.wheel, "cd" * 32, "built", 1.0)
    pyslurm_install.ensure_installed(controller, other)  # type: ignore[arg-type]
    assert f"rm -rf {pyslurm_install.INSTALL_DIR}" in controller.calls[before:]
