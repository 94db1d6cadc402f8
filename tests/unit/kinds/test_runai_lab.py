"""The Run:ai kind's inventory and containers carry the same alerting path as a Slurm lab's: the
prometheus role's variables, Alertmanager published on 127.0.0.1, the alerts directory mounted."""

from lab import contract
from lab.blueprint import runai_blueprint
from lab.bringup import container_specs
from lab.kinds import runai_lab
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT


def test_a_runai_lab_loads_the_dcgm_and_runai_rules() -> None:
    model = runai_blueprint.load(BLUEPRINTS_DIR / "runai.yaml")
    variables = runai_lab.inventory(model)["all"]["vars"]
    assert variables["prometheus_rule_areas"] == ["dcgm", "runai"]
    assert {"prometheus_cluster_label", "prometheus_scrape_jobs"} <= set(variables)


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
