"""The pyslurm way into Slurm, host side: the plan-to-description mapping, checked against the tag's
own attribute list and against what the slurmrestd way sends, and the client driving the real agent
script (a stand-in pyslurm on its path): answers, Slurm's refusals, retries and a dying agent."""

from __future__ import annotations

import sys
import tarfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from lab import versions
from lab.workload import pyslurm_agent
from lab.workload.plan import PlannedJob, lab_limit_minutes
from lab.workload.pyslurm_client import PyslurmClient, docker_exec, job_fields
from lab.workload.pyslurm_wheel import DEFAULT_ARCHIVE
from lab.workload.submit import NodeShape, SubmitError, job_description
from lab.workload.summary import summarise

SHAPE = NodeShape(gpus_per_node=8, cpus_per_gpu=14, memory_per_gpu_mb=250000)
JOB = PlannedJob(0, 10.0, "inference", "frank", "inference", "gpu", "high", 4, 1, 95.0, 86400, "completed")
FAKE_PYSLURM = Path(__file__).parent / "fixtures" / "fake-pyslurm"


def _tag_file(member: str) -> str:
    with tarfile.open(DEFAULT_ARCHIVE) as tar:
        extracted = tar.extractfile(f"{versions.PYSLURM_ARCHIVE_PREFIX}/{member}")
        assert extracted is not None
        return extracted.read().decode()


def _tag_attributes() -> set[str]:
    """JobSubmitDescription's attributes as the tag declares them: its .pxd's ``cdef public:`` block."""
    pxd = _tag_file("pyslurm/core/job/submission.pxd")
    block = pxd[pxd.index("    cdef public:\n") :].split("\n")[1:]
    declared = set()
    for line in block:
        if not line.startswith("        ") or not line.strip().isidentifier():
            break
        declared.add(line.strip())
    assert {"partitions", "gres_per_node", "cpus_per_gpu", "environment"} <= declared, "the parse found them"
    return declared


@pytest.mark.parametrize("job", [JOB, replace(JOB, gpus=16, nodes=2)], ids=["one-node", "two-nodes"])
def test_every_field_is_an_attribute_of_the_tags_job_submit_description(job: PlannedJob) -> None:
    assert set(job_fields(job, 60.0, SHAPE, "/tmp", 1)) <= _tag_attributes()


def test_the_tag_cannot_set_memory_per_gpu_so_the_partition_default_gives_it() -> None:
    # _set_memory formats `val`, a name it never binds: NameError. When a tag fixes it, send memory_per_gpu.
    source = _tag_file("pyslurm/core/job/submission.pyx")
    body = source[source.index("def _set_memory(self):") : source.index("def _set_open_mode(self):")]
    assert "elif self.memory_per_gpu:" in body and "u64(dehumanize(val))" in body
    assert "val =" not in body
    assert "memory_per_gpu" not in job_fields(JOB, 60.0, SHAPE, "/tmp", 1)


@pytest.mark.parametrize("job", [JOB, replace(JOB, gpus=16, nodes=2)], ids=["one-node", "two-nodes"])
def test_the_description_asks_for_what_the_slurmrestd_way_asks_for(job: PlannedJob) -> None:
    rest = job_description(job, 60.0, SHAPE, "/tmp", 1)
    fields = job_fields(job, 60.0, SHAPE, "/tmp", 1)
    same = ("name", "account", "qos", "comment", "script", "standard_output")
    assert {key: fields[key] for key in same} == {key: rest[key] for key in same}
    assert fields["partitions"] == rest["partition"]
    assert fields["time_limit"] == rest["time_limit"]["number"] == lab_limit_minutes(job.time_limit_s, 60.0)
    assert fields["working_directory"] == rest["current_working_directory"]
    assert [f"{k}={v}" for k, v in fields["environment"].items()] == rest["environment"]
    assert f"gres/gpu:{fields['cpus_per_gpu']}" == rest["cpus_per_tres"]
    if job.nodes > 1:
        assert (fields["nodes"], fields["gres_per_node"]) == (2, "gpu:8") and "gpus" not in fields
        assert rest["tres_per_node"] == "gres/gpu:8"
    else:
        assert fields["gpus"] == 4 and f"gres/gpu:{fields['gpus']}" == rest["tres_per_job"]


def test_each_user_has_its_own_agent_in_the_controller() -> None:
    argv = docker_exec("lab-default-controller", "/opt/agent.py")
    assert argv("alice") == [
        "docker", "exec", "-i", "-u", "alice", "lab-default-controller", "python3", "-u", "/opt/agent.py",
    ]  # fmt: skip


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PyslurmClient]:
    """A client whose agents are the real agent script on this machine, with the stand-in pyslurm."""
    monkeypatch.setenv("FAKE_PYSLURM_STATE", str(tmp_path / "controller.json"))
    monkeypatch.setenv("PYTHONPATH", str(FAKE_PYSLURM))
    started: list[str] = []

    def argv(user: str) -> list[str]:
        started.append(user)
        return [sys.executable, "-u", pyslurm_agent.__file__]

    pauses: list[float] = []
    made = PyslurmClient(argv, pause=pauses.append)
    made.started, made.pauses = started, pauses  # type: ignore[attr-defined]
    yield made
    made.close()


def test_submit_cancel_states_and_accounting_go_through_one_agent_per_user(client: PyslurmClient) -> None:
    first = client.submit("alice", job_fields(JOB, 60.0, SHAPE, "/tmp", 1))
    second = client.submit("bob", job_fields(JOB, 60.0, SHAPE, "/tmp", 1))
    assert (first, second) == (1, 2)
    assert client.states("root") == {1: "PENDING", 2: "PENDING"}
    client.cancel("alice", first)
    assert client.states("root")[first] == "CANCELLED"
    assert client.start_time("root", second) is None
    records = client.accounting("root", 1_799_999_000.7)
    assert records[first]["state"] == {"current": ["CANCELLED"]}
    assert records[first]["time"] == {"submission": 1_800_000_000, "start": 0, "end": 0}
    assert client.started == ["alice", "bob", "root"]  # type: ignore[attr-defined]
    # The records are what the run summary reads from slurmrestd's accounting.
    summary = summarise({first: JOB}, records, time_scale=60.0, lab_elapsed_s=1.0, planned=1, rejections=[])
    assert summary.by_state == {"CANCELLED": 1} and summary.started == 0


def test_a_job_purged_from_slurmctld_has_no_start_time_but_is_an_error_to_load(client: PyslurmClient) -> None:
    purged = r"pyslurm start_time as root: Invalid job id specified \(Slurm errno 2017\)"
    with pytest.raises(SubmitError, match=purged):
        client.start_time("root", 99)


def test_slurms_refusal_names_errno_and_fix_and_is_not_retried(client: PyslurmClient) -> None:
    with pytest.raises(SubmitError) as raised:
        client.submit("frank", job_fields(replace(JOB, partition="nosuch"), 60.0, SHAPE, "/tmp", 1))
    message = str(raised.value)
    assert message.startswith("pyslurm submit as frank: Invalid partition name specified (Slurm errno 2000)")
    assert "Fix: the partition does not exist" in message
    assert client.pauses == []  # type: ignore[attr-defined]
    assert client.submit("frank", job_fields(JOB, 60.0, SHAPE, "/tmp", 1)) == 1, "the agent goes on"


def test_an_unreachable_slurmctld_is_retried(client: PyslurmClient, tmp_path: Path) -> None:
    (tmp_path / "controller.json.unreachable").touch()
    assert client.submit("frank", job_fields(JOB, 60.0, SHAPE, "/tmp", 1)) == 1
    assert client.pauses == [0.5]  # type: ignore[attr-defined]


def test_an_agent_that_dies_is_restarted_and_then_named_with_its_exit(client: PyslurmClient) -> None:
    crash = job_fields(JOB, 60.0, SHAPE, "/tmp", 1) | {"name": "crash"}
    with pytest.raises(SubmitError) as raised:
        client.submit("frank", crash)
    assert "no answer after 5 attempts" in str(raised.value) and "it exited (3)" in str(raised.value)
    assert client.started == ["frank"] * 5  # type: ignore[attr-defined]
    assert client.submit("frank", job_fields(JOB, 60.0, SHAPE, "/tmp", 1)) == 1


def test_an_agent_without_pyslurm_says_so_and_names_both_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "")
    client = PyslurmClient(lambda _user: [sys.executable, "-u", pyslurm_agent.__file__])
    with pytest.raises(SubmitError) as raised:
        client.states("root")
    client.close()
    message = str(raised.value)
    assert "the pyslurm agent as root cannot start: cannot import pyslurm from" in message
    assert "--submit-via slurmrestd" in message


def test_an_agent_that_cannot_import_pyslurm_has_it_put_back_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PYSLURM_STATE", str(tmp_path / "controller.json"))
    monkeypatch.setenv("PYTHONPATH", "")
    installs: list[str] = []

    def reinstall() -> None:  # as on a controller made anew: the next agent finds pyslurm
        installs.append("again")
        monkeypatch.setenv("PYTHONPATH", str(FAKE_PYSLURM))

    client = PyslurmClient(lambda _user: [sys.executable, "-u", pyslurm_agent.__file__], reinstall)
    assert client.states("root") == {}
    client.close()
    assert installs == ["again"]
