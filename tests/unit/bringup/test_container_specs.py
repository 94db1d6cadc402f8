"""The Prometheus container of a Slurm lab: Alertmanager published on the blueprint's host port,
the alert receiver's directory the host's .lab/<lab>/alerts/, writable."""

from lab import contract
from lab.blueprint.slurm_blueprint import load
from lab.bringup import container_specs
from lab.paths import BLUEPRINTS_DIR, DEFAULT_BLUEPRINT


def test_prometheus_publishes_alertmanager_on_the_blueprints_port() -> None:
    for path, alertmanager in ((DEFAULT_BLUEPRINT, 9093), (BLUEPRINTS_DIR / "superpod.yaml", 9103)):
        model = load(path)
        spec = next(s for s in container_specs.slurm_containers(model) if s.role == "prometheus")
        assert spec.ports == {
            contract.PROMETHEUS_PORT: model.ports.prometheus,
            contract.ALERTMANAGER_PORT: alertmanager,
        }
        assert spec.writable_binds == {str(contract.alerts_dir(model.name)): contract.ALERTS_MOUNT}
        assert contract.ALERT_RECEIVER_PORT not in spec.ports  # the receiver stays inside


def test_machine_like_hosts_keep_the_alerts_mount() -> None:
    specs = container_specs.slurm_containers(load(DEFAULT_BLUEPRINT))
    machines = container_specs.machines(specs, {spec.hostname: {} for spec in specs})
    prometheus = next(s for s in machines if s.role == "prometheus")
    assert prometheus.writable_binds == {str(contract.alerts_dir("default")): contract.ALERTS_MOUNT}
