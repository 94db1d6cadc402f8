"""A Run:ai lab: a real Kubernetes control plane with the real KAI Scheduler, kwok nodes and
kube-state-metrics (lab.kube), the Run:ai driver beside them, and a Prometheus that scrapes them all.

`lab up --blueprint blueprints/runai.yaml [--scenario NAME]` builds the binaries once (cached by
version), makes the lab's certificates, and brings it up; events, every process's log and the
pod-resources file land in .lab/<lab>/runai/ on the host, the user's kubeconfig in .lab/<lab>/kubeconfig.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab import contract, versions
from lab.attach import running
from lab.blueprint.runai_blueprint import RunaiBlueprint, RunaiBlueprintError
from lab.blueprint.runai_blueprint import load as load_runai
from lab.bringup import container_specs, engine, images, keys, lifecycle, lock
from lab.bringup.provision import ProvisionError
from lab.central import builds, fence_install
from lab.contract import container_name
from lab.egress import fence as fence_hosts
from lab.egress import key as egress_key
from lab.egress import names as egress_names
from lab.kube_host import binaries, pki
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.prometheus_ui import build as prometheus_ui
from lab.prometheus_ui import install as ui_install
from lab.runai import rest_auth

# The rule files a Run:ai lab's Prometheus loads (ansible/roles/prometheus/files/rules/<area>.yml).
RULE_AREAS = ("dcgm", "runai", "targets")
EGRESS_AREAS = ("dcgm", "runai", "targets")  # the areas whose records cross the fence (egress-<area>.yml)
# The driver's output directory as the egress gateway sees it (contract.SITE_LOGS_MOUNT/runai/): the
# Events API's events and the KAI components' logs cross (signals/logs.md, "The Run:ai lab's lines").
SITE_OUT = f"{contract.SITE_LOGS_MOUNT}/runai"


@dataclass(frozen=True)
class RunaiUpOptions:
    """The options of `lab up` for a Run:ai blueprint."""

    build: images.BuildOptions = field(default_factory=images.BuildOptions)
    keep_on_failure: bool = False
    prometheus_ui_source: Path | None = None  # Prometheus' web UI: the tag's web/ui archive to build from
    scenario: str = "baseline"  # the failure mode the driver scripts on the real cluster
    time_scale: float = 1.0  # blueprint seconds per wall second
    seed: int = 0  # seed of arrivals, sizes and run times


def node_names(model: RunaiBlueprint) -> list[str]:
    return [name for pool in model.node_pools for name in pool.node_names()]


def scrape_jobs(model: RunaiBlueprint) -> list[dict[str, Any]]:
    def job(name: str, why: str, port: int) -> dict[str, Any]:
        return {"name": name, "why": why, "targets": [{"address": f"runai:{port}"}]}

    ports = contract.KUBE_PORTS
    jobs: list[dict[str, Any]] = [
        job(
            "runai",
            "Run:ai cluster series (runai_*), computed from the API server's objects.",
            contract.RUNAI_API_PORT,
        ),
        job(
            "kube-state-metrics",
            "kube-state-metrics v2.15.0 on the real API server.",
            ports["kube-state-metrics"],
        ),
    ]
    for index, pool in enumerate(model.node_pools):
        jobs.append(
            job(
                f"kai-{pool.name}",
                f"KAI scheduler of node pool {pool.name}.",
                contract.kai_scheduler_port(index),
            )
        )
    for component in ("kai-binder", "kai-podgrouper", "kai-queuecontroller", "kai-podgroupcontroller"):
        jobs.append(job(component, f"KAI {component[4:]}.", ports[component]))
    jobs.append(
        job(
            "training-operator",
            f"Kubeflow's training operator {versions.TRAINING_OPERATOR_VERSION} (PyTorchJobs).",
            ports["training-operator"],
        )
    )
    if not model.scrape_dcgm:
        return jobs
    jobs.append(
        {
            "name": "dcgm",
            "why": "dcgm-exporter in Kubernetes mode, one target per node, instance <node>:9400.",
            "targets": [
                {
                    "address": f"runai:{contract.runai_dcgm_port(index)}",
                    "labels": {"instance": f"{node}:{contract.DCGM_EXPORTER_PORT}"},
                }
                for index, node in enumerate(node_names(model))
            ],
        }
    )
    return jobs


def egress_logs(model: RunaiBlueprint) -> fence_hosts.SiteLogs:
    """What of the Run:ai lab's logs crosses: every event, and KAI's lines that name an object of a
    project (a workload, its pods, its pod group), their names pseudonymised in the text too."""
    return fence_hosts.SiteLogs(
        events=(f"{SITE_OUT}/events.jsonl",),
        kai=(f"{SITE_OUT}/logs/kai-*.log",),
        kai_lines=egress_names.namespaces_in_text(model),
        names_in_text=egress_names.in_text(model),
    )


def inventory(model: RunaiBlueprint) -> dict[str, Any]:
    def address(name: str) -> dict[str, Any]:
        return {"ansible_host": container_name(model.name, name)}

    def host(name: str) -> dict[str, Any]:
        return {"hosts": {name: address(name)}}

    document: dict[str, Any] = {
        "all": {
            "vars": {
                "ansible_connection": "community.docker.docker",
                "ansible_python_interpreter": "/usr/bin/python3",
                "slurm_service_mode": "container",
                "prometheus_cluster_label": model.name,
                "prometheus_scrape_jobs": scrape_jobs(model),
                "prometheus_rule_areas": list(RULE_AREAS),
            },
            "children": {"prometheus": host("prometheus"), "runai": host("runai")},
        }
    }
    fence_hosts.apply(document, model.egress, EGRESS_AREAS, address, logs=egress_logs(model))
    return document


def extravars(
    model: RunaiBlueprint,
    source: Path,
    options: RunaiUpOptions,
    web_ui: prometheus_ui.UiBuild | None,
    fence: builds.CentralBinaries | None = None,
) -> dict[str, Any]:
    """The lab's extra variables: the Run:ai driver's, Prometheus' web UI when it was built, and the
    fence's binaries when they are cached."""
    return {
        "runai_blueprint_src": str(source.resolve()),
        "runai_scenario": options.scenario,
        "runai_time_scale": options.time_scale,
        "runai_seed": options.seed,
        "runai_node_pools": [pool.name for pool in model.node_pools],
        "runai_log_verbosity": model.log_verbosity,
        **prometheus_ui.install_vars(web_ui),
        **fence_install.install_vars(fence),
    }


class RunaiKind:
    name = "runai"
    errors: tuple[type[Exception], ...] = (RunaiBlueprintError, ProvisionError, binaries.BuildError)

    def load(self, path: Path) -> RunaiBlueprint:
        return load_runai(path)

    def summary(self, model: RunaiBlueprint, source: str) -> str:
        return (
            f"Run:ai lab '{model.name}', {len(model.node_pools)} node pools, {len(node_names(model))} nodes"
        )

    def up(
        self, model: RunaiBlueprint, source: Path, options: RunaiUpOptions, progress: Progress
    ) -> running.RunningLab:
        state = lab_state_dir(model.name)
        built = binaries.ensure(progress)
        progress.say(
            f"Kubernetes and KAI binaries: {'cached' if built.cached else 'built'} in {built.directory}"
        )
        creds = pki.ensure(
            state / "keys" / "kube",
            ("runai", container_name(model.name, "runai")),
            f"https://127.0.0.1:{contract.KUBE_APISERVER_PORT}",
        )
        _write_user_kubeconfig(state / "kubeconfig", creds, model.ports.kube_apiserver)
        rest_keys = rest_credentials(model.name)
        fence = None
        if model.egress.enabled:
            egress_key.ensure(model.name)
            fence = fence_install.for_bring_up(model.name, progress)
        web_ui = ui_install.for_bring_up(model.name, progress)
        rendered = lifecycle.Rendered(
            name=model.name,
            specs=container_specs.runai_containers(
                model, str(built.directory), str(creds.directory), str(rest_keys)
            ),
            inventory=inventory(model),
            extravars=extravars(model, source, options, web_ui, fence),
            blueprint_source=source,
            state_dirs=(state / "runai", contract.alerts_dir(model.name)),
        )
        with lock.for_bring_up(state, model.name, progress):
            # Built beside the bring-up and installed once it is done: the lab does not wait for them.
            if web_ui is None:
                ui_install.install_later(model.name, options.prometheus_ui_source, progress)
            if model.egress.enabled and fence is None:
                fence_install.install_later(model.name, progress)
            lifecycle.bring_up(rendered, options.build, options.keep_on_failure, progress)
        return running.attach(engine.require_engine(), model.name, self.name, model)

    def up_message(self, model: RunaiBlueprint, options: RunaiUpOptions) -> str:
        kubeconfig = lab_state_dir(model.name) / "kubeconfig"
        return (
            f"Run:ai lab '{model.name}' is up (scenario {options.scenario}) on a real Kubernetes "
            f"{versions.KUBERNETES_VERSION} with KAI Scheduler {versions.KAI_SCHEDULER_VERSION}\n"
            f"kubectl: export KUBECONFIG={kubeconfig}\n"
            f"Run:ai API: http://127.0.0.1:{model.ports.runai_rest} (client {rest_auth.CLIENT_ID}, secret in "
            f"{rest_keys_dir(model.name) / rest_auth.CLIENT_SECRET_FILE}; docs/runai.md)"
        )

    def facts(self, name: str) -> dict[str, str]:
        kubeconfig = lab_state_dir(name) / "kubeconfig"
        found = {"kubeconfig": str(kubeconfig)} if kubeconfig.exists() else {}
        secret = rest_keys_dir(name) / rest_auth.CLIENT_SECRET_FILE
        if secret.exists():
            found["runai-rest client secret"] = f"{secret} (client {rest_auth.CLIENT_ID})"
        return {**found, **ui_install.facts(name), **fence_install.facts(name)}


def rest_keys_dir(lab: str) -> Path:
    return lab_state_dir(lab) / "keys" / "runai-rest"


def rest_credentials(lab: str) -> Path:
    """The REST API's client secret and token signing key, made once per lab (0400, in a 0700
    directory), mounted read-only into the Run:ai container."""
    directory = rest_keys_dir(lab)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    for name, data in rest_auth.secret_files().items():
        keys.ensure_secret_file(directory / name, functools.partial(bytes, data))
    return directory


def _write_user_kubeconfig(path: Path, creds: pki.Credentials, port: int) -> None:
    """The administrator's kubeconfig for the user's kubectl, on the host's loopback port (0400)."""
    server = f"https://127.0.0.1:{port}"
    text = pki.user_kubeconfig(creds, server)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)


KIND = RunaiKind()
