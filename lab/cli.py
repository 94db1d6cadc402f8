"""The `lab` command: its help, and the command groups of :mod:`lab.commands` mounted on it."""

from __future__ import annotations

import typer

from lab.commands import access, alerts, capture, churn, drill, egress, fault, lab_lifecycle, web_ui, workload

app = typer.Typer(
    help=(
        "aifactory-lab: see the real series, labels, logs, alerts and churn of GPU-cluster scheduler paths "
        "before you touch a production cluster. A blueprint (blueprints/) declares one of two labs:\n\n"
        "- **Slurm lab** (`kind: slurm`, the default blueprint): a real Slurm 24.11 cluster in containers, "
        "the pinned Slurm exporter, a DCGM shim with fake GPUs on every node, Prometheus, Alertmanager and "
        "a live workload.\n"
        "- **Run:ai lab** (`lab up --blueprint blueprints/runai.yaml`): a real Kubernetes control plane with "
        "the real KAI Scheduler, kwok nodes and kube-state-metrics; the `runai_*` families computed from "
        "that cluster; the DCGM shim, Prometheus and Alertmanager.\n\n"
        "Start: `lab doctor` (what this machine lacks), `lab up`, `lab status`; "
        "`lab sh controller -- sinfo` runs a command in a Slurm lab; `lab down` stops a lab.\n\n"
        "Then: `lab fault` gives a GPU an XID or a throttle; `lab alerts` shows what fired and what "
        "Alertmanager delivered; `lab drill` breaks a Slurm daemon or node and times the recovery; "
        "`lab churn` reports a Slurm lab's series churn and cardinality; `lab capture` scrapes every "
        "target with provenance. `lab COMMAND --help` says more."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

# Groups whose commands are `lab`'s own (lab up, lab status, …), then the groups with subcommands.
for _group in (lab_lifecycle.app, access.app, web_ui.app, drill.app, alerts.app, capture.app):
    app.registered_commands += _group.registered_commands
app.add_typer(workload.app, name="workload")
app.add_typer(churn.app, name="churn")
app.add_typer(fault.app, name="fault")
app.add_typer(egress.app, name="egress")
