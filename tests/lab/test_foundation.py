"""The default lab: real daemons, munge across containers, GPUs as GRES, jobs, accounting, REST."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable

import docker
import pytest
from testinfra.host import Host

from lab import contract
from lab.attach import slurmrestd
from lab.blueprint.slurm_blueprint import Blueprint
from lab.bringup import containers
from lab.contract import role_image

from .conftest import run_lab, wait_for

pytestmark = pytest.mark.lab

DAEMONS = {
    "controller": ["munged", "slurmctld", "slurm_exporter"],
    "dbd": ["munged", "mariadbd", "slurmdbd"],
    "restd": ["munged", "slurmrestd"],
}


@pytest.mark.parametrize(("hostname", "daemons"), sorted(DAEMONS.items()))
def test_service_daemons_run(host: Callable[[str], Host], hostname: str, daemons: list[str]) -> None:
    for daemon in daemons:
        assert host(hostname).process.filter(comm=daemon), f"{daemon} is not running on {hostname}"


def test_every_node_runs_slurmd_and_munged(host: Callable[[str], Host], default_lab: Blueprint) -> None:
    for node in default_lab.nodes.names:
        assert host(node).process.filter(comm="slurmd"), node
        assert host(node).process.filter(comm="munged"), node


def test_munge_credentials_decode_across_containers(
    host: Callable[[str], Host], default_lab: Blueprint
) -> None:
    for source, target in [("controller", default_lab.nodes.names[-1]), (default_lab.nodes.names[0], "dbd")]:
        credential = host(source).check_output("munge -n")
        decoded = host(target).run(f"echo '{credential}' | unmunge")
        assert decoded.rc == 0, decoded.stderr
        assert re.search(r"STATUS:\s+Success \(0\)", decoded.stdout)


# The states of a healthy node; the live workload may hold or be releasing some (ansible's ready.yml).
UP = ("idle", "mixed", "allocated", "completing", "reserved", "planned")


def test_every_node_is_up_with_eight_h100(host: Callable[[str], Host], default_lab: Blueprint) -> None:
    lines = host("controller").check_output("sinfo --noheader --Node --partition=gpu --format='%N %T %G'")
    nodes = dict((line.split()[0], line.split()[1:]) for line in lines.splitlines())
    assert sorted(nodes) == default_lab.nodes.names
    for name, (state, gres) in nodes.items():
        if name in default_lab.drained_nodes:  # held out for repair by the blueprint (`drains:`)
            assert state == "drained$", f"{name} should be drained in a MAINT reservation ($), is {state}"
        else:
            assert state in UP, f"{name} is {state}"
        assert gres == "gpu:h100:8", f"{name} has {gres}"


def test_the_site_state_is_made_once(host: Callable[[str], Host], default_lab: Blueprint) -> None:
    """The held node is drained with its reason and the reservations exist; provisioning's tool run
    again (as every `lab up` does) changes nothing: it only adds what is missing."""
    controller = host("controller")
    again = controller.run("/usr/local/sbin/slurm-site-state /etc/slurm/site-state.json")
    assert (again.rc, again.stdout) == (0, "")
    drained = controller.check_output(f"sinfo -h -N -n {default_lab.drained_nodes[0]} -o '%T|%E'")
    assert drained.splitlines()[0] == f"drained$|{default_lab.drains[0].reason}"  # $: in a MAINT reservation
    names = controller.check_output("scontrol show reservation -o | grep -o 'ReservationName=[^ ]*'")
    assert sorted(names.split()) == sorted(f"ReservationName={r.name}" for r in default_lab.reservations)


def test_node_declares_the_dgx_shape(host: Callable[[str], Host]) -> None:
    shown = host("controller").check_output("scontrol show node dgx-001")
    assert "CPUTot=112" in shown
    assert "RealMemory=2000000" in shown
    assert "Gres=gpu:h100:8" in shown


def test_gpu_job_sees_two_gpus_and_is_accounted(host: Callable[[str], Host]) -> None:
    controller = host("controller")
    submitted = controller.check_output(
        'su - alice -c "sbatch --wait --parsable --gres=gpu:2 --time=1 --output=/tmp/gpu-job-%j.out '
        "--wrap 'echo GPUS=\\$SLURM_JOB_GPUS'\""
    )
    job_id = submitted.strip().split(";")[0]

    def accounted() -> str:
        fields = "State,User,Account,AllocTRES,NodeList"
        return controller.check_output(f"sacct -X -n -P -j {job_id} -o {fields}").strip()

    # slurmdbd records the job a moment after sbatch --wait returns.
    record = wait_for(
        lambda: "COMPLETED" in accounted() and accounted(), 30, f"sacct COMPLETED for job {job_id}"
    )
    state, user, account, tres, node = str(record).split("|")
    assert (state, user, account) == ("COMPLETED", "alice", "llm-pretrain")
    assert "gres/gpu=2" in tres
    output = host(node).check_output(f"cat /tmp/gpu-job-{job_id}.out")
    match = re.search(r"GPUS=(\S+)", output)
    assert match, output
    indices = match.group(1).split(",")
    assert len(indices) == 2 and all(index.isdigit() for index in indices), output


def test_fairshare_comes_from_accounting(host: Callable[[str], Host], default_lab: Blueprint) -> None:
    accounts = host("controller").check_output("sshare -a -n -P -o Account,User")
    for account in default_lab.accounts:
        assert f"{account.name}|" in accounts


def test_users_have_the_same_uid_everywhere(host: Callable[[str], Host], default_lab: Blueprint) -> None:
    for hostname in ["controller", "dbd", "restd", *default_lab.nodes.names]:
        for user in default_lab.all_users:
            assert host(hostname).user(user.name).uid == user.uid


def _restd_url(engine: docker.DockerClient, lab: Blueprint) -> str:
    restd = containers.find_container(engine, lab.name, "restd")
    assert restd is not None
    binding = restd.attrs["NetworkSettings"]["Ports"][f"{contract.SLURMRESTD_PORT}/tcp"][0]
    return f"http://{binding['HostIp']}:{binding['HostPort']}"


def test_slurmrestd_answers_an_authenticated_ping(
    engine: docker.DockerClient, default_lab: Blueprint
) -> None:
    controller = containers.find_container(engine, default_lab.name, "controller")
    credentials = slurmrestd.issue_token(controller, "alice", 300)
    status, body = slurmrestd.ping(_restd_url(engine, default_lab), credentials)
    assert status == 200, body
    assert body["pings"][0]["pinged"] == "UP"
    assert body["meta"]["slurm"]["version"] == {"major": "24", "minor": "11", "micro": "5"}


def test_slurmrestd_refuses_an_unauthenticated_ping(
    engine: docker.DockerClient, default_lab: Blueprint
) -> None:
    status, _ = slurmrestd.ping(_restd_url(engine, default_lab), None)
    assert status == 401


def test_slurmrestd_refuses_a_forged_token(
    engine: docker.DockerClient, default_lab: Blueprint, host: Callable[[str], Host]
) -> None:
    """Slurm 24.11.5 answers /ping with HTTP 200 even then, but slurmctld rejects the credential:
    the ping reports the controller DOWN, and any real query fails (HTTP 511)."""
    forged = slurmrestd.Credentials(
        "alice",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdW4iOiJhbGljZSIsImV4cCI6OTk5OTk5OTk5OX0.c2lnbmF0dXJl",
    )
    url = _restd_url(engine, default_lab)
    _, body = slurmrestd.ping(url, forged)
    assert body["pings"][0]["pinged"] == "DOWN"
    status, body = slurmrestd.request(url, f"/slurm/{slurmrestd.API_VERSION}/jobs", forged)
    assert status == 511, body
    assert "jwt_decode failure" in host("controller").check_output("tail -n 50 /var/log/slurm/slurmctld.log")


def test_published_ports_bind_loopback_only(engine: docker.DockerClient, default_lab: Blueprint) -> None:
    for container in containers.lab_containers(engine, default_lab.name):
        for bindings in (container.attrs["NetworkSettings"]["Ports"] or {}).values():
            for binding in bindings or []:
                assert binding["HostIp"] == "127.0.0.1", (container.name, binding)


@pytest.mark.parametrize(
    ("hostname", "path", "owner"),
    [
        ("controller", "/etc/munge/munge.key", "munge"),
        ("controller", "/var/spool/slurm/jwt_hs256.key", "slurm"),
        ("dbd", "/var/spool/slurm/jwt_hs256.key", "slurm"),
        # The host's file, mounted read-only where the gateway reads it (lab.egress.key).
        ("egress", "/etc/aifactory-lab/egress-key/hmac-sha256.key", "root"),
    ],
)
def test_keys_are_0400_and_owned_by_their_daemon(
    host: Callable[[str], Host], hostname: str, path: str, owner: str
) -> None:
    key = host(hostname).file(path)
    assert key.mode == 0o400
    assert key.user == owner


def test_no_key_is_baked_into_an_image(engine: docker.DockerClient) -> None:
    for role in ("controller", "dbd", "restd", "node"):
        listing = engine.containers.run(
            role_image(role),
            ["sh", "-c", "ls /etc/munge/munge.key /var/spool/slurm/jwt_hs256.key 2>/dev/null; true"],
            remove=True,
        )
        assert listing.strip() == b"", (role, listing)


def test_jwt_key_is_only_where_it_is_needed(host: Callable[[str], Host], default_lab: Blueprint) -> None:
    for hostname in ["restd", *default_lab.nodes.names]:
        assert not host(hostname).file("/var/spool/slurm/jwt_hs256.key").exists, hostname


def test_status_json_reports_containers_nodes_and_endpoints(default_lab: Blueprint) -> None:
    report = json.loads(run_lab("status", "--lab", default_lab.name, "--json").stdout)
    assert {"containers", "nodes", "endpoints"} <= set(report)
    services = {"controller", "dbd", "restd", "prometheus", "egress", "central"}  # the fence's two too
    assert {row["host"] for row in report["containers"]} == {*services, *default_lab.nodes.names}
    assert all(row["state"] == "running" for row in report["containers"])
    controller = next(row for row in report["containers"] if row["host"] == "controller")
    assert controller["daemons"] == {"munged": "running", "slurmctld": "running", "slurm_exporter": "running"}
    assert report["fence"].startswith("installed")  # in the background, or with the lab once cached
    assert {node["name"] for node in report["nodes"]} == set(default_lab.nodes.names)
    assert all(node["gres"] == "gpu:h100:8" for node in report["nodes"])
    url = report["endpoints"]["slurmrestd"]
    assert url == f"http://127.0.0.1:{default_lab.ports.slurmrestd}"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{url}/slurm/{slurmrestd.API_VERSION}/ping", timeout=5)
    assert refused.value.code == 401
    refused.value.close()


def test_lab_sh_passes_the_exit_code_through(default_lab: Blueprint) -> None:
    assert (
        run_lab(
            "sh", "controller", "--lab", default_lab.name, "--", "sh", "-c", "exit 7", check=False
        ).returncode
        == 7
    )
    shown = run_lab("sh", "dgx-002", "--lab", default_lab.name, "--", "hostname")
    assert shown.stdout.strip() == "dgx-002"


def test_lab_sh_names_an_unknown_service(default_lab: Blueprint) -> None:
    result = run_lab("sh", "nosuchnode", "--lab", default_lab.name, "--", "true", check=False)
    assert result.returncode == 1
    assert "no service or node 'nosuchnode'" in result.stderr
