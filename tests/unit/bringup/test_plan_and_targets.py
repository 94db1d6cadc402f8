"""Pure planning: containers per blueprint, DCGM scrape targets, Run:ai lab jobs, XID fault files."""

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from lab import contract
from lab.attach import faults
from lab.blueprint import slurm_blueprint as blueprint
from lab.blueprint.runai_blueprint import load as load_runai
from lab.bringup import container_specs, render
from lab.dcgm.shim import write_injected_xid
from lab.kinds import runai_lab
from lab.paths import BLUEPRINTS_DIR


def _racks(default_data: dict[str, Any], count: int = 16, per_rack: int = 8) -> blueprint.Blueprint:
    data = copy.deepcopy(default_data)
    data["nodes"]["count"] = count
    data["partitions"][1]["nodes"] = "dgx-016"
    data["topology"] = {"layout": "racks", "nodes_per_rack": per_rack}
    return blueprint.parse(data)


def test_default_lab_has_services_and_one_container_per_node(default_data: dict[str, Any]) -> None:
    specs = container_specs.slurm_containers(blueprint.parse(default_data))
    assert [s.hostname for s in specs] == [
        "controller",
        "dbd",
        "restd",
        "prometheus",
        "egress",
        "central",
        "dgx-001",
        "dgx-002",
        "dgx-003",
        "dgx-004",
    ]
    published = {s.hostname: s.ports for s in specs if s.ports}
    assert published == {
        "controller": {9341: 9341},
        "restd": {6820: 6820},
        "prometheus": {9090: 9090, 9093: 9093},  # Prometheus and Alertmanager
        "central": {8428: 8428, 9428: 9428, 8880: 8880},  # VictoriaMetrics, VictoriaLogs and vmalert
    }
    config = {str(contract.slurm_config_dir("default")): contract.SLURM_CONFIG_MOUNT}
    shared = {str(contract.shared_dir("default")): contract.SHARED_MOUNT}
    binds = {s.hostname: s.binds for s in specs}
    # Every Slurm host reads the lab's one rendered copy of the Slurm files; only nodes see the shared dir.
    assert all(binds[host] == config for host in ("controller", "dbd", "restd"))
    assert all(s.binds == {**config, **shared} for s in specs if s.role == "node")
    assert binds["prometheus"] == binds["central"] == {}
    # The gateway reads the lab's pseudonym key, read-only; nothing else does.
    assert binds["egress"] == {str(contract.egress_key_dir("default")): contract.EGRESS_KEY_MOUNT}
    assert {s.hostname: s.image_role for s in specs if s.hostname in ("egress", "central")} == {
        "egress": "fence",
        "central": "fence",
    }


def test_a_lab_with_egress_off_has_no_gateway_and_no_centre(default_data: dict[str, Any]) -> None:
    data = {**copy.deepcopy(default_data), "egress": {"enabled": False}}
    hosts = [s.hostname for s in container_specs.slurm_containers(blueprint.parse(data))]
    assert "egress" not in hosts and "central" not in hosts


def test_every_container_boots_with_an_empty_run_and_nodes_get_a_small_tmpfs_to_fill(
    default_data: dict[str, Any],
) -> None:
    """/run as on a host (no pid file of the last boot survives); the drill's full file system only
    on hosts that run slurmd, and small: filling it must not cost memory."""
    for lab in (blueprint.parse(default_data), _racks(default_data)):
        for spec in container_specs.slurm_containers(lab):
            assert spec.tmpfs["/run"] == "mode=0755"
            slurmd_host = spec.role in ("node", "rack")
            assert (contract.DRILL_FULL_MOUNT in spec.tmpfs) == slurmd_host, spec.hostname
    assert contract.DRILL_FULL_SIZE == "64k"


def test_rack_lab_has_one_container_per_rack(default_data: dict[str, Any]) -> None:
    specs = container_specs.slurm_containers(_racks(default_data))
    racks = [s for s in specs if s.role == "rack"]
    assert [(s.hostname, s.nodes[0], s.nodes[-1]) for s in racks] == [
        ("rack01", "dgx-001", "dgx-008"),
        ("rack02", "dgx-009", "dgx-016"),
    ]
    assert all(s.image.endswith("/node:" + s.image.rsplit(":", 1)[1]) for s in racks)


def test_a_spec_change_changes_the_digest(default_data: dict[str, Any]) -> None:
    spec = container_specs.slurm_containers(blueprint.parse(default_data))[2]
    changed = container_specs.ContainerSpec(spec.lab, spec.hostname, spec.role, ports={6820: 7000})
    assert spec.digest("image-a") != changed.digest("image-a")
    assert spec.digest("image-a") != spec.digest("image-b")


def test_dcgm_targets_keep_the_real_instance_label(default_data: dict[str, Any]) -> None:
    per_node = render.dcgm_targets(blueprint.parse(default_data))
    assert per_node[0] == {
        "node": "dgx-001",
        "host": "dgx-001",
        "port": 9400,
        "address": "dgx-001:9400",
        "instance": "dgx-001:9400",
    }
    racks = render.dcgm_targets(_racks(default_data))
    assert racks[8] == {
        "node": "dgx-009",
        "host": "rack02",
        "port": 9401,
        "address": "rack02:9401",
        "instance": "dgx-009:9400",
    }
    assert len({t["address"] for t in racks}) == 16


def test_rack_nodes_get_their_own_mapping_directory(default_data: dict[str, Any]) -> None:
    assert render.cluster_vars(blueprint.parse(default_data))["job_mapping_dir"] == contract.JOB_MAPPING_DIR
    assert render.cluster_vars(_racks(default_data))["job_mapping_dir"] == f"{contract.JOB_MAPPING_DIR}/%n"


def test_slurm_scrape_job_only_when_the_exporter_exists(default_data: dict[str, Any]) -> None:
    model = blueprint.parse(default_data)
    assert [j["name"] for j in render.scrape_jobs(model, slurm_exporter=True)] == ["slurm", "dcgm"]
    assert [j["name"] for j in render.scrape_jobs(model, slurm_exporter=False)] == ["dcgm"]


def test_slurm_26_05_scrapes_every_slurmctld_endpoint_renamed_beside_the_exporter(
    default_data: dict[str, Any],
) -> None:
    model = blueprint.parse({**default_data, "slurm": {**default_data["slurm"], "version": "26.05"}})
    jobs = {job["name"]: job for job in render.scrape_jobs(model, slurm_exporter=True)}
    assert list(jobs) == ["slurm", "dcgm", "slurmctld"]
    native = jobs["slurmctld"]
    assert {t["address"] for t in native["targets"]} == {"controller:6817"}
    assert [t["labels"] for t in native["targets"]] == [
        {"__metrics_path__": f"/metrics/{name}", "endpoint": name}
        for name in ("jobs", "nodes", "partitions", "scheduler", "jobs-users-accts")
    ]
    (rename,) = native["metric_relabel_configs"]
    assert re.sub(
        f"^(?:{rename['regex']})$", rename["replacement"].replace("${1}", r"\1"), "slurm_nodes_alloc"
    ) == ("slurmctld_nodes_alloc")
    switched_off = {**default_data["slurm"], "version": "26.05", "native_metrics": False}
    names = [
        j["name"] for j in render.scrape_jobs(blueprint.parse({**default_data, "slurm": switched_off}), True)
    ]
    assert names == ["slurm", "dcgm"]


def test_runai_lab_scrapes_the_driver_ksm_every_kai_component_the_training_operator_and_every_node() -> None:
    model = load_runai(BLUEPRINTS_DIR / "runai.yaml")
    jobs = {job["name"]: job for job in runai_lab.scrape_jobs(model)}
    kai = {"kai-binder", "kai-podgrouper", "kai-queuecontroller", "kai-podgroupcontroller"}
    pools = {f"kai-{pool.name}" for pool in model.node_pools}
    assert set(jobs) == {"runai", "kube-state-metrics", "dcgm", "training-operator", *pools, *kai}
    assert jobs["training-operator"]["targets"] == [{"address": "runai:8288"}]
    assert jobs["kai-inference"]["targets"] == [{"address": "runai:8181"}]  # the second pool's scheduler
    nodes = runai_lab.node_names(model)
    assert [t["labels"]["instance"] for t in jobs["dcgm"]["targets"]] == [f"{n}:9400" for n in nodes]
    assert jobs["dcgm"]["targets"][0]["address"] == f"runai:{contract.RUNAI_DCGM_FIRST_PORT}"


def test_xid_fault_is_written_atomically_where_the_shim_reads_it(
    default_data: dict[str, Any], isolated_state: Path
) -> None:
    path = faults.inject_xid(blueprint.parse(default_data), "dgx-003", 5, 79, write_injected_xid)
    assert path == isolated_state / "default" / "shared" / "xid" / "dgx-003" / "5"
    assert path.read_text() == "79\n"
    assert path.stat().st_mode & 0o777 == 0o644, "lab-gpu-app reads it as the job's user"
    assert [p.name for p in path.parent.iterdir()] == ["5"], "no temporary file left behind"


@pytest.mark.parametrize(
    ("node", "gpu", "code", "message"),
    [("dgx-009", 0, 79, "has no node"), ("dgx-001", 8, 79, "use 0..7"), ("dgx-001", 0, 1000, "out of range")],
)
def test_bad_faults_name_what_is_allowed(
    default_data: dict[str, Any], isolated_state: Path, node: str, gpu: int, code: int, message: str
) -> None:
    with pytest.raises(faults.FaultError, match=message):
        faults.inject_xid(blueprint.parse(default_data), node, gpu, code, write_injected_xid)
    assert not (isolated_state / "default" / "shared" / "xid").exists()
