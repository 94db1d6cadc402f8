"""A Run:ai lab: the Run:ai construct's emulator in a container, and a Prometheus that scrapes
every target it serves (/metrics, /kai/<pool>/metrics, one DCGM target per emulated node).

`lab up --blueprint blueprints/runai.yaml [--scenario NAME]` brings it up; events, KAI logs and the
pod-resources file land in .lab/<lab>/runai/ on the host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab import contract
from lab.bringup import container_specs, engine, lifecycle, lock, running
from lab.bringup.provision import ProvisionError
from lab.contract import container_name
from lab.kinds.base import UpOptions
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.spec.runai_blueprint import RunaiBlueprint, RunaiBlueprintError
from lab.spec.runai_blueprint import load as load_runai


def node_names(model: RunaiBlueprint) -> list[str]:
    return [name for pool in model.node_pools for name in pool.node_names()]


def scrape_jobs(model: RunaiBlueprint) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = [
        {
            "name": "runai",
            "why": "Run:ai cluster series and kube-state-metrics.",
            "targets": [{"address": f"runai:{contract.RUNAI_API_PORT}"}],
        }
    ]
    for pool in model.node_pools:
        jobs.append(
            {
                "name": f"kai-{pool.name}",
                "why": f"KAI scheduler of node pool {pool.name}.",
                "metrics_path": f"/kai/{pool.name}/metrics",
                "targets": [{"address": f"runai:{contract.RUNAI_API_PORT}"}],
            }
        )
    jobs.append(
        {
            "name": "dcgm",
            "why": "dcgm-exporter in Kubernetes mode, one target per node, instance <node>:9400.",
            "targets": [
                {
                    "address": f"runai:{contract.RUNAI_DCGM_FIRST_PORT + index}",
                    "instance": f"{node}:{contract.DCGM_EXPORTER_PORT}",
                }
                for index, node in enumerate(node_names(model))
            ],
        }
    )
    return jobs


def inventory(model: RunaiBlueprint) -> dict[str, Any]:
    def host(name: str) -> dict[str, Any]:
        return {"hosts": {name: {"ansible_host": container_name(model.name, name)}}}

    return {
        "all": {
            "vars": {
                "ansible_connection": "community.docker.docker",
                "ansible_python_interpreter": "/usr/bin/python3",
                "slurm_service_mode": "container",
                "prometheus_cluster_label": model.name,
                "prometheus_scrape_jobs": scrape_jobs(model),
            },
            "children": {"prometheus": host("prometheus"), "runai": host("runai")},
        }
    }


class RunaiKind:
    name = "runai"
    errors: tuple[type[Exception], ...] = (RunaiBlueprintError, ProvisionError)

    def load(self, path: Path) -> RunaiBlueprint:
        return load_runai(path)

    def summary(self, model: RunaiBlueprint, source: str) -> str:
        return (
            f"Run:ai lab '{model.name}', {len(model.node_pools)} node pools, {len(node_names(model))} nodes"
        )

    def up(
        self, model: RunaiBlueprint, source: Path, options: UpOptions, progress: Progress
    ) -> running.RunningLab:
        state = lab_state_dir(model.name)
        rendered = lifecycle.Rendered(
            name=model.name,
            specs=container_specs.runai_containers(model),
            inventory=inventory(model),
            extravars={
                "runai_blueprint_src": str(source.resolve()),
                "runai_scenario": options.scenario,
                "runai_time_scale": options.time_scale,
                "runai_seed": options.seed,
            },
            blueprint_source=source,
            state_dirs=(state / "runai",),
        )
        with lock.held(state, "up"):
            lifecycle.bring_up(rendered, options.build, options.keep_on_failure, progress)
        return running.attach(engine.require_engine(), model.name, self.name, model)

    def up_message(self, model: RunaiBlueprint, options: UpOptions) -> str:
        return f"Run:ai lab '{model.name}' is up (scenario {options.scenario})"

    def facts(self, name: str) -> dict[str, str]:
        return {}


KIND = RunaiKind()
