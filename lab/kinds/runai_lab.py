"""A Run:ai lab: the Run:ai construct's emulator in a container, and a Prometheus that scrapes
every target it serves (/metrics, /kai/<pool>/metrics, one DCGM target per emulated node).

`lab up --blueprint blueprints/runai.yaml [--scenario NAME]` brings it up; events, KAI logs and the
pod-resources file land in .lab/<lab>/runai/ on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lab import contract
from lab.bringup import container_specs, containers, engine, images, lock
from lab.bringup.provision import run_playbook
from lab.contract import container_name
from lab.paths import lab_state_dir, state_root
from lab.progress import Progress
from lab.spec.runai_blueprint import RunaiBlueprint
from lab.spec.runai_blueprint import load as load_runai


@dataclass(frozen=True)
class RunaiOptions:
    scenario: str = "baseline"
    time_scale: float = 1.0
    seed: int = 0


def is_runai_blueprint(path: Path) -> bool:
    """A Run:ai blueprint declares node pools; a Slurm blueprint declares nodes."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "node_pools" in data


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


def up(source: Path, options: RunaiOptions, build: images.BuildOptions, progress: Progress) -> RunaiBlueprint:
    model = load_runai(source)
    state = lab_state_dir(model.name)
    with lock.held(state, "up"):
        client = engine.ensure_engine(progress)
        engine.check_disk(state_root())
        images.build_all(client, build, progress)
        (state / "runai").mkdir(parents=True, exist_ok=True)
        with progress.step(f"containers of lab '{model.name}'"):
            containers.up(client, model.name, container_specs.runai_containers(model), progress)
        private = state / "ansible"
        hosts = private / "inventory" / "hosts.yml"
        hosts.parent.mkdir(parents=True, exist_ok=True)
        hosts.write_text(yaml.safe_dump(inventory(model), sort_keys=False), encoding="utf-8")
        extravars = {
            "runai_blueprint_src": str(source.resolve()),
            "runai_scenario": options.scenario,
            "runai_time_scale": options.time_scale,
            "runai_seed": options.seed,
        }
        with progress.step("provisioning with Ansible"):
            run_playbook(private, hosts, extravars, progress)
        (state / "blueprint.yaml").write_bytes(source.read_bytes())
    return model
