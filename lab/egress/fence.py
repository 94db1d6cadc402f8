"""The fence in a lab's inventory (pure): the egress rule files the site's Prometheus loads, the
allow-list the gateway sends (every record of those files, by name), and the two hosts either side,
the site's egress gateway and the centre. A blueprint with ``egress.enabled: false`` gets none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lab import contract
from lab.blueprint.egress_spec import JOB_ID_LABELS, EgressSpec
from lab.paths import ANSIBLE_DIR

RULES_DIR = ANSIBLE_DIR / "roles" / "prometheus" / "files" / "rules"
GATEWAY_HOST = contract.EGRESS_HOST
CENTRAL_HOST = contract.CENTRAL_HOST


# What the gateway's prometheus receiver adds for each read of /federate, as a Prometheus scrape does
# (prometheus.io/docs/concepts/jobs_instances/, "Automatically generated labels and time series"), with
# job="egress": the centre's view of whether the site's egress is read. No relabelling reaches them.
READ_HEALTH = (
    "up",
    "scrape_duration_seconds",
    "scrape_samples_post_metric_relabeling",
    "scrape_samples_scraped",
    "scrape_series_added",
)


@dataclass(frozen=True)
class SiteLogs:
    """The log files whose lines cross, as the gateway's host sees them (globs): a Slurm site's logfmt
    job lines, and slurmctld logs, of which only the job lines cross (signals/logs.md); a Run:ai site's
    Kubernetes events and KAI's component logs, of which only the lines matching ``kai_lines`` cross,
    the names in their text pseudonymised by ``names_in_text`` (regular expressions, lab.egress.names)."""

    job_lines: tuple[str, ...] = ()
    slurmctld: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    kai: tuple[str, ...] = ()
    kai_lines: str = ""
    names_in_text: str = ""


def area(source_area: str) -> str:
    """The egress rule file's area for a source area: ``dcgm`` → ``egress-dcgm``."""
    return f"egress-{source_area}"


def records(areas: tuple[str, ...], rules_dir: Path = RULES_DIR) -> list[str]:
    """Every record of the egress rule files of ``areas``, in file order: the allow-list."""
    names: list[str] = []
    for source_area in areas:
        path = rules_dir / f"{area(source_area)}.yml"
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        names += [
            rule["record"] for group in document["groups"] for rule in group["rules"] if "record" in rule
        ]
    return names


def apply(
    document: dict[str, Any],
    egress: EgressSpec,
    areas: tuple[str, ...],
    address: Any,
    logs: SiteLogs = SiteLogs(),
) -> None:
    """Add the fence to an Ansible inventory ``document`` (in place): the egress rule files of
    ``areas`` beside the site's rules, the gateway's and the centre's hosts (``address(host)`` gives
    each its connection variables) and what the gateway sends: those records, and the lines of
    ``logs``. Nothing when egress is off."""
    if not egress.enabled:
        return
    common = document["all"]["vars"]
    common["prometheus_rule_areas"] = [*common["prometheus_rule_areas"], *(area(a) for a in areas)]
    children = document["all"]["children"]
    children[CENTRAL_HOST] = {"hosts": {CENTRAL_HOST: address(CENTRAL_HOST)}}
    children[GATEWAY_HOST] = {
        "hosts": {GATEWAY_HOST: address(GATEWAY_HOST)},
        "vars": {
            "egress_gateway_series": records(areas),
            "egress_gateway_pseudonymised_labels": list(egress.pseudonymised_labels),
            "egress_gateway_job_id_labels": list(JOB_ID_LABELS),
            "egress_gateway_job_logs": list(logs.job_lines),
            "egress_gateway_slurmctld_logs": list(logs.slurmctld),
            "egress_gateway_event_logs": list(logs.events),
            "egress_gateway_kai_logs": list(logs.kai),
            "egress_gateway_kai_lines": logs.kai_lines,
            "egress_gateway_names_in_text": logs.names_in_text,
        },
    }
