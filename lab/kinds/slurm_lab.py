"""A Slurm lab: the real Slurm cluster, its pinned exporter, the DCGM shim on every node, Prometheus.

`lab up` renders it once from the blueprint (containers, Ansible inventory and variables), builds the
exporter binary before any container exists, and hands both to the one bring-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab import contract, versions
from lab.bringup import container_specs, engine, keys, lifecycle, lock, running
from lab.bringup.keys import LabKeys
from lab.bringup.provision import ProvisionError, slurm_inventory
from lab.bringup.slurmrestd import RestError
from lab.kinds.base import UpOptions
from lab.paths import lab_state_dir
from lab.progress import Progress
from lab.slurm_exporter import binary as exporter
from lab.spec import slurm_blueprint
from lab.spec.slurm_blueprint import Blueprint
from lab.workload import background

# A lab shows an XID drain within one health-check run of 30 s instead of a real site's 300 s.
HEALTH_CHECK_INTERVAL_S = 30


class SlurmKind:
    name = "slurm"
    errors: tuple[type[Exception], ...] = (slurm_blueprint.BlueprintError, ProvisionError, RestError)

    def load(self, path: Path) -> Blueprint:
        return slurm_blueprint.load(path)

    def summary(self, model: Blueprint, source: str) -> str:
        if model.workload is not None:
            from lab.workload.plan import check_against

            check_against(model, source)
        gpus = model.nodes.count * model.nodes.shape.gpus
        return (
            f"lab '{model.name}', {model.nodes.count} nodes ({model.topology.layout}), {gpus} GPUs, "
            f"{len(model.partitions)} partitions, {len(model.accounts)} accounts, "
            f"{len(model.all_users)} users"
        )

    def up(
        self, model: Blueprint, source: Path, options: UpOptions, progress: Progress
    ) -> running.RunningLab:
        state = lab_state_dir(model.name)
        with lock.held(state, "up"):
            lab_keys = keys.ensure(state / "keys")
            built = _exporter(options, progress)
            (state / "exporter-status").write_text(
                f"{built.how} → {built.binary}\n" if built else "off (lab up --no-exporter)\n",
                encoding="utf-8",
            )
            rendered = render(model, source, lab_keys, built.binary if built else None)
            lifecycle.bring_up(rendered, options.build, options.keep_on_failure, progress)
        return running.attach(engine.require_engine(), model.name, self.name, model)

    def up_message(self, model: Blueprint, options: UpOptions) -> str:
        return f"lab '{model.name}' is up: {len(model.nodes.names)} nodes × {model.nodes.shape.gpus} GPUs"

    def facts(self, name: str) -> dict[str, str]:
        status = lab_state_dir(name) / "exporter-status"
        pid = background.running_pid(name)
        return {
            "slurm_exporter": status.read_text().strip() if status.exists() else "unknown",
            "workload": f"live (pid {pid})" if pid else "stopped",
        }


def render(model: Blueprint, source: Path, lab_keys: LabKeys, binary: Path | None) -> lifecycle.Rendered:
    """Everything the bring-up of a Slurm lab needs (pure)."""
    document = slurm_inventory(model, lab_keys, slurm_exporter=binary is not None)
    extravars: dict[str, Any] = {"dcgm_health_check_interval": HEALTH_CHECK_INTERVAL_S}
    if binary is not None:
        extravars.update(slurm_exporter_binary_src=str(binary), slurm_exporter_enabled=True)
    return lifecycle.Rendered(
        name=model.name,
        specs=container_specs.slurm_containers(model),
        inventory=document,
        extravars=extravars,
        blueprint_source=source,
        state_dirs=(contract.slurm_config_dir(model.name),),
    )


def _exporter(options: UpOptions, progress: Progress) -> exporter.ExporterBuild | None:
    """The exporter binary, before any container exists: a lab never comes up half without it."""
    if not options.exporter:
        progress.say("the Slurm exporter is off (--no-exporter)")
        return None
    built = exporter.ensure_binary(progress, options.exporter_source)
    if built.cached:
        progress.say(f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: cached ({built.how})")
    else:
        progress.say(
            f"slurm_exporter {versions.SLURM_EXPORTER_VERSION}: {built.how} in {built.seconds:.1f} s"
        )
    return built


KIND = SlurmKind()
