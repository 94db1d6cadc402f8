"""The Run:ai kind's inventory and containers carry the same alerting path as a Slurm lab's: the
prometheus role's variables, Alertmanager published on 127.0.0.1, the alerts directory mounted; and the
same fence, whose gateway reads the driver's events and KAI's logs."""

import re

from lab import contract
from lab.blueprint import runai_blueprint
from lab.blueprint.egress_spec import RunaiEgress
from lab.bringup import container_specs
from lab.egress import fence
from lab.kinds import runai_lab
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT, lab_state_dir


def test_a_runai_lab_loads_the_dcgm_and_runai_rules() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    variables = runai_lab.inventory(model)["all"]["vars"]
    assert variables["prometheus_rule_areas"] == [
        "dcgm",
        "runai",
        "targets",
        "egress-dcgm",
        "egress-runai",
        "egress-targets",
    ]
    assert {"prometheus_cluster_label", "prometheus_scrape_jobs"} <= set(variables)
    # Each area has its rule file, each egress area its egress file (targets.yml records nothing).
    rules = PROJECT_ROOT / "ansible" / "roles" / "prometheus" / "files" / "rules"
    assert all((rules / f"{area}.yml").is_file() for area in variables["prometheus_rule_areas"])
    gateway = runai_lab.inventory(model)["all"]["children"]["egress"]["vars"]
    assert gateway["egress_gateway_series"] == fence.records(runai_lab.EGRESS_AREAS)


def test_the_fence_reads_the_drivers_events_and_kais_logs_through_a_read_only_bind() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    gateway = runai_lab.inventory(model)["all"]["children"]["egress"]["vars"]
    assert gateway["egress_gateway_event_logs"] == ["/var/log/site/runai/events.jsonl"]
    assert gateway["egress_gateway_kai_logs"] == ["/var/log/site/runai/logs/kai-*.log"]
    assert gateway["egress_gateway_job_logs"] == gateway["egress_gateway_slurmctld_logs"] == []
    names_in_text = re.compile(gateway["egress_gateway_names_in_text"])
    assert names_in_text.search("task <runai-team-a/train-00001-ftgr7> to node <dgx-001>")
    specs = {spec.role: spec for spec in container_specs.runai_containers(model, "/build", "/pki", "/rest")}
    out = str(lab_state_dir(model.name) / "runai")
    assert specs["egress"].binds[out] == "/var/log/site/runai"
    assert out not in specs["egress"].writable_binds
    assert specs["central"].ports == {
        contract.VICTORIA_METRICS_PORT: 8528,
        contract.VICTORIA_LOGS_PORT: 9528,
        contract.VMALERT_PORT: 8980,
    }


def test_with_egress_off_a_runai_lab_has_no_fence() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    model = model.model_copy(update={"egress": RunaiEgress(enabled=False)})
    assert "egress" not in runai_lab.inventory(model)["all"]["children"]
    roles = {spec.role for spec in container_specs.runai_containers(model, "/build", "/pki", "/rest")}
    assert roles == {"prometheus", "runai"}


def test_a_runai_labs_prometheus_publishes_alertmanager_beside_it() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    specs = container_specs.runai_containers(model, "/build", "/pki", "/rest")
    prometheus = next(spec for spec in specs if spec.role == "prometheus")
    assert prometheus.ports == {contract.PROMETHEUS_PORT: 9190, contract.ALERTMANAGER_PORT: 9193}
    assert prometheus.writable_binds == {str(contract.alerts_dir(model.name)): contract.ALERTS_MOUNT}


def test_a_second_runai_lab_publishes_the_ports_its_blueprint_names() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml").model_copy(
        update={
            "name": "runai-second",
            "ports": runai_blueprint.RunaiPorts(
                runai=19590, prometheus=19190, alertmanager=19193, kube_apiserver=26443, runai_rest=19589
            ),
        }
    )
    ports = {
        spec.role: spec.ports for spec in container_specs.runai_containers(model, "/build", "/pki", "/rest")
    }
    assert ports["prometheus"] == {contract.PROMETHEUS_PORT: 19190, contract.ALERTMANAGER_PORT: 19193}
    assert ports["runai"] == {
        contract.RUNAI_API_PORT: 19590,
        contract.KUBE_APISERVER_PORT: 26443,
        contract.RUNAI_REST_PORT: 19589,
    }


def test_a_blueprint_may_leave_the_dcgm_targets_unscraped() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    names = [job["name"] for job in runai_lab.scrape_jobs(model)]
    unscraped = [
        job["name"] for job in runai_lab.scrape_jobs(model.model_copy(update={"scrape_dcgm": False}))
    ]
    assert "dcgm" in names and unscraped == [name for name in names if name != "dcgm"]


def test_the_scale_bench_blueprint_is_kais_cluster() -> None:
    model = runai_blueprint.load(PROJECT_ROOT / "bench" / "blueprints" / "runai-scale.yaml")
    (pool,) = model.node_pools
    assert (pool.nodes, pool.gpus_per_node, model.scrape_dcgm) == (500, 8, False)
