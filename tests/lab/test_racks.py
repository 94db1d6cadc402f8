"""Multiple-slurmd: a reduced rack lab (2 rack containers × 8 slurmd) beside the default lab."""

from __future__ import annotations

import re

import docker
import pytest
import testinfra

from lab import contract
from lab.blueprint.slurm_blueprint import Blueprint
from lab.bringup import containers

pytestmark = pytest.mark.lab


def _rack(lab: Blueprint, rack: str) -> testinfra.host.Host:
    return testinfra.get_host(f"docker://{contract.container_name(lab.name, rack)}")


def test_rack_lab_has_one_container_per_rack(engine: docker.DockerClient, racks_lab: Blueprint) -> None:
    hosts = {c.labels[contract.LABEL_HOST] for c in containers.lab_containers(engine, racks_lab.name)}
    assert hosts == {"controller", "dbd", "restd", "prometheus", "rack01", "rack02"}


def test_each_rack_runs_one_slurmd_per_node_with_its_own_files(racks_lab: Blueprint) -> None:
    for rack, nodes in racks_lab.racks.items():
        host = _rack(racks_lab, rack)
        commands = [p.args for p in host.process.filter(comm="slurmd")]
        assert sorted(re.sub(r".*-N ", "", args) for args in commands) == nodes
        for node in nodes:
            assert host.file(f"/var/log/slurm/slurmd-{node}.log").contains("slurmd started")
            assert host.file(f"/run/slurmd-{node}.pid").exists
            assert host.file(f"/var/spool/slurm/slurmd-{node}").is_directory


def test_every_rack_node_is_idle_with_eight_h100(racks_lab: Blueprint) -> None:
    controller = _rack(racks_lab, "controller")
    lines = controller.check_output("sinfo --noheader --Node --format='%N %T %G'").splitlines()
    states = {line.split()[0]: line.split()[1:] for line in lines}
    assert sorted(states) == racks_lab.nodes.names
    assert all(value == ["idle", "gpu:h100:8"] for value in states.values()), states


def test_nodes_of_a_rack_answer_on_their_own_ports(racks_lab: Blueprint) -> None:
    shown = _rack(racks_lab, "controller").check_output("scontrol show node dgx-010")
    assert "NodeAddr=rack02" in shown
    assert f"Port={racks_lab.slurmd_port('dgx-010')}" in shown


def test_a_job_spans_both_racks(racks_lab: Blueprint) -> None:
    controller = _rack(racks_lab, "controller")
    job = "srun --nodes=2 --nodelist=dgx-001,dgx-016 --gres=gpu:1 --time=1 printenv SLURMD_NODENAME"
    output = controller.check_output(f"su - alice -c '{job}'")
    assert sorted(output.split()) == ["dgx-001", "dgx-016"]
