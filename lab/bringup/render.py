"""Blueprint → Ansible inventory and variables (pure). The same roles and variables serve three kinds of
host; what differs between them lives here, in inventory variables, never in forks of tasks:

- ``container``: the lab's container-native hosts (Docker connection, daemons by lab-daemon, packages in
  the images);
- ``systemd``: the lab's machine-like hosts (`lab up --hosts systemd`: SSH, systemd, packages installed
  by the roles), which are still containers on this machine (see :data:`LAB_HOST_VARS`);
- ``real``: a site's own hosts over SSH (`lab inventory --ssh`), with every role default.
"""

from __future__ import annotations

from typing import Any, Literal

from lab import contract
from lab.blueprint import hostlist
from lab.blueprint.slurm_blueprint import Blueprint
from lab.contract import container_name

Hosts = Literal["container", "systemd", "real"]

# What a lab host cannot be, whatever boots it: it has no cgroup tree of its own to hand to Slurm (the
# machine's is mounted read-only), its hardware is this machine's, not the blueprint's DGX shape (slurmd
# takes the declared one), and its GPUs come from the lab's DCGM shim.
LAB_HOST_VARS: dict[str, Any] = {
    "slurm_use_cgroups": False,
    "slurm_declare_node_shape": True,
    "lab_fake_gpus": True,
}
# Container-native hosts also run no init system and carry their packages in the images.
CONTAINER_HOST_VARS: dict[str, Any] = {
    **LAB_HOST_VARS,
    "slurm_service_mode": "container",
    "slurm_install_packages": False,
    "prometheus_install_package": False,
    "ansible_connection": "community.docker.docker",
}
HOST_VARS: dict[str, dict[str, Any]] = {
    "container": CONTAINER_HOST_VARS,
    "systemd": {**LAB_HOST_VARS, "slurm_service_mode": "systemd", "slurm_install_packages": True},
    "real": {"slurm_service_mode": "systemd"},
}


# The rule files a Slurm lab's Prometheus loads (ansible/roles/prometheus/files/rules/<area>.yml).
RULE_AREAS = ("dcgm", "slurm", "targets")

# The site's override of the exporter's own SlurmNodeWarning (its alerts.yml, loaded unmodified): a node
# in a MAINT reservation is drained on purpose, and sinfo marks it with the state suffix `$` (sinfo(1),
# NODE STATE CODES; `status="drained$"` captured, signals/slurm.md), so the route sends that alert to
# Alertmanager's `quiet` receiver. Any other drained node is still told. The default blueprint holds
# dgx-003 so for repair (`rma-dgx-003`), which would otherwise warn for as long as the lab runs.
ALERTMANAGER_QUIET = [['alertname="SlurmNodeWarning"', 'status=~".+[$]"']]


def cluster_vars(blueprint: Blueprint) -> dict[str, Any]:
    """The ``slurm_cluster`` variable every role and template reads."""
    shape = blueprint.nodes.shape
    node_lines = []
    for host, names in blueprint.nodes_by_container.items():
        line: dict[str, Any] = {"names": hostlist.compress(names), "host": host}
        if blueprint.racks:
            ports = [blueprint.slurmd_port(n) for n in names]
            line["port"] = f"[{ports[0]}-{ports[-1]}]" if len(ports) > 1 else str(ports[0])
        node_lines.append(line)
    return {
        "name": blueprint.slurm.cluster_name,
        "controller_host": "controller",
        "dbd_host": "dbd",
        "multiple_slurmd": bool(blueprint.racks),
        "max_job_count": blueprint.slurm.max_job_count,
        "min_job_age": blueprint.slurm.min_job_age_s,
        "node_shape": {
            "cpus": shape.cpus,
            "sockets": shape.sockets,
            "cores_per_socket": shape.cores_per_socket,
            "threads_per_core": shape.threads_per_core,
            "real_memory": shape.real_memory_mb,
            "gres": f"gpu:{shape.gpu_type}:{shape.gpus}",
            "gpu_type": shape.gpu_type,
            "gpu_files": f"/dev/nvidia[0-{shape.gpus - 1}]" if shape.gpus > 1 else "/dev/nvidia0",
            "gpus": shape.gpus,
            # A job gets its share of the node per GPU unless it asks otherwise (DGX H100: 14 cores
            # and 250 GB per GPU), so eight 1-GPU jobs fit on one node as on a real DGX.
            "def_cpu_per_gpu": shape.cpus // shape.gpus,
            "def_mem_per_gpu": shape.real_memory_mb // shape.gpus,
        },
        "all_nodes": hostlist.compress(blueprint.nodes.names),
        # Many slurmd per rack container: each node needs its own mapping directory (%n = node name).
        "job_mapping_dir": f"{contract.JOB_MAPPING_DIR}/%n" if blueprint.racks else contract.JOB_MAPPING_DIR,
        "dcgm_targets": dcgm_targets(blueprint),
        "node_lines": node_lines,
        "partitions": [
            {
                "name": p.name,
                "nodes": "ALL" if p.nodes == "ALL" else hostlist.compress(blueprint.partition_nodes(p)),
                "default": p.default,
                "max_time": p.max_time,
            }
            for p in blueprint.partitions
        ],
        "accounts": [
            {"name": a.name, "description": a.description, "fairshare": a.fairshare}
            for a in blueprint.accounts
        ],
        "users": [{"name": u.name, "uid": u.uid, "account": u.account} for u in blueprint.all_users],
        "qos": [
            {"name": q.name, "priority": q.priority, "max_wall": q.max_wall, "description": q.description}
            for q in blueprint.qos
        ],
        # slurm.conf Licenses= (local); remote ones are accounting resources (sacctmgr add resource).
        "local_licenses": ",".join(f"{lic.name}:{lic.count}" for lic in blueprint.licenses if not lic.server),
        "remote_licenses": [
            {"name": lic.name, "server": lic.server, "server_type": lic.server_type, "count": lic.count}
            for lic in blueprint.licenses
            if lic.server
        ],
        "reservations": [r.model_dump() for r in blueprint.reservations],
        "drains": [{"nodes": d.nodes, "reason": d.reason} for d in blueprint.drains],
        "drained_nodes": blueprint.drained_nodes,
    }


def dcgm_targets(blueprint: Blueprint) -> list[dict[str, Any]]:
    """One scrape target per node. A rack serves its nodes on 9401, 9402 …; every target keeps the
    instance label a real per-node dcgm-exporter would have (<node>:9400)."""
    targets = []
    for host, nodes in blueprint.nodes_by_container.items():
        for position, node in enumerate(nodes, start=1):
            port = contract.DCGM_EXPORTER_PORT + position if blueprint.racks else contract.DCGM_EXPORTER_PORT
            targets.append(
                {
                    "node": node,
                    "host": host,
                    "port": port,
                    "address": f"{host}:{port}",
                    "instance": f"{node}:{contract.DCGM_EXPORTER_PORT}",
                }
            )
    return targets


def scrape_jobs(blueprint: Blueprint, slurm_exporter: bool) -> list[dict[str, Any]]:
    """Prometheus scrape jobs of a Slurm lab, beside Prometheus' own."""
    jobs: list[dict[str, Any]] = []
    if slurm_exporter:
        jobs.append(
            {
                "name": "slurm",
                "why": "The Slurm exporter beside slurmctld (SckyzO/slurm_exporter, registered port "
                f"{contract.SLURM_EXPORTER_PORT}).",
                "targets": [{"address": f"controller:{contract.SLURM_EXPORTER_PORT}"}],
            }
        )
    jobs.append(
        {
            "name": "dcgm",
            "why": "One target per GPU node, like dcgm-exporter; rack targets keep the instance <node>:9400.",
            "targets": [
                {"address": t["address"], "labels": {"instance": t["instance"]}}
                for t in dcgm_targets(blueprint)
            ],
        }
    )
    if blueprint.slurm.serves_native_metrics:
        jobs.append(native_metrics_job())
    return jobs


# The user slurmctld lets read its metrics (MetricsAuthUsers); its JWT is made by
# lab.bringup.keys.ensure_metrics_token and installed 0400 by the prometheus role.
METRICS_USER = "prometheus"


def native_metrics_job() -> dict[str, Any]:
    """Slurm's own metrics (25.11 and later): one target per endpoint slurmctld serves, told apart by
    ``endpoint`` (their `up` and `scrape_*` series would collide otherwise), and every family renamed
    ``slurm_<stem>`` → ``slurmctld_<stem>``. 26 of Slurm's names are also the exporter's, with other
    labels; the exporter's rules and dashboards query them without a job matcher, so one more series
    under such a name would change every answer (a `sum` would double). Renaming every family, not only
    the shared ones, keeps one rule that also holds for names either side adds later
    (signals/slurm-native.md)."""
    address = f"controller:{contract.SLURMCTLD_PORT}"
    return {
        "name": "slurmctld",
        # MetricsAuthUsers=prometheus: the endpoints answer 401 without this user's JWT.
        "credentials_file": contract.SLURMCTLD_METRICS_TOKEN,
        "why": "slurmctld's own metrics on SlurmctldPort (MetricsType=metrics/openmetrics; "
        "signals/slurm-native.md), renamed slurm_* → slurmctld_* so they never mix with the exporter's.",
        "targets": [
            {"address": address, "labels": {"__metrics_path__": f"/metrics/{endpoint}", "endpoint": endpoint}}
            for endpoint in contract.SLURMCTLD_METRICS_ENDPOINTS
        ],
        "metric_relabel_configs": [
            {
                "source_labels": ["__name__"],
                "regex": "slurm_(.+)",
                "target_label": "__name__",
                "replacement": "slurmctld_${1}",
            }
        ],
    }


def inventory(
    blueprint: Blueprint, hosts: Hosts = "container", slurm_exporter: bool = True
) -> dict[str, Any]:
    """An Ansible YAML inventory. For ``real`` hosts the host names are the blueprint's; edit
    ``ansible_host``. For ``systemd`` the lab fills in each host's SSH address once it runs."""
    node_hosts: dict[str, Any] = {}
    for host, nodes in blueprint.nodes_by_container.items():
        node_hosts[host] = {"slurmd_node_names": nodes, **host_address(blueprint, host, hosts)}

    def single(host: str) -> dict[str, Any]:
        return {"hosts": {host: host_address(blueprint, host, hosts)}}

    common: dict[str, Any] = {
        "slurm_cluster": cluster_vars(blueprint),
        "slurm_package_version": blueprint.slurm.release.deb_version,
        "slurm_native_metrics": blueprint.slurm.serves_native_metrics,
        "slurm_metrics_user": METRICS_USER if blueprint.slurm.serves_native_metrics else "",
        **HOST_VARS[hosts],
        "prometheus_cluster_label": blueprint.slurm.cluster_name,
        "prometheus_scrape_jobs": scrape_jobs(blueprint, slurm_exporter),
        "prometheus_rule_areas": list(RULE_AREAS),
        "prometheus_alertmanager_quiet": ALERTMANAGER_QUIET,
        "ansible_python_interpreter": "/usr/bin/python3",
    }
    return {
        "all": {
            "vars": common,
            "children": {
                "slurmdbd": single("dbd"),
                "slurmctld": single("controller"),
                "slurmrestd": single("restd"),
                "slurmd": {"hosts": node_hosts},
                "prometheus": single("prometheus"),
            },
        }
    }


def host_address(blueprint: Blueprint, host: str, hosts: Hosts) -> dict[str, str]:
    """How Ansible reaches ``host``: its container, or its name (an SSH host)."""
    if hosts == "container":
        return {"ansible_host": container_name(blueprint.name, host)}
    return {"ansible_host": host}
