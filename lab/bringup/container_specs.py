"""The containers a lab needs, from its blueprint (pure). :mod:`lab.bringup.containers` makes the
engine match them; a spec's digest labels its container, so an unchanged spec is never recreated."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from functools import partial

from lab import contract, versions
from lab.blueprint.runai_blueprint import RunaiBlueprint
from lab.blueprint.slurm_blueprint import Blueprint
from lab.paths import lab_state_dir

IMAGE_OF_ROLE = {"rack": "node", contract.EGRESS_HOST: "fence", contract.CENTRAL_HOST: "fence"}


@dataclass(frozen=True)
class ContainerSpec:
    """One container: its host name on the lab network is also its Ansible inventory name."""

    lab: str
    hostname: str
    role: str  # controller | dbd | restd | node | rack | prometheus | egress | central | runai
    nodes: tuple[str, ...] = ()  # Slurm node names whose slurmd runs here
    ports: dict[int, int] = field(default_factory=dict)  # container port → host port on 127.0.0.1
    volumes: dict[str, str] = field(default_factory=dict)  # volume name → mount point
    read_volumes: dict[str, str] = field(default_factory=dict)  # another host's volume → mount (read-only)
    binds: dict[str, str] = field(default_factory=dict)  # host path → mount point (read-only)
    writable_binds: dict[str, str] = field(default_factory=dict)  # host path → mount point
    # mount point → tmpfs options; /run is a host's: empty at every boot, so no stale pid file survives
    tmpfs: dict[str, str] = field(default_factory=lambda: {"/run": "mode=0755"})
    # lab-daemon: the role's image, its daemons started by /usr/local/sbin/lab-daemon (the default).
    # systemd: the machine-like host image, systemd as PID 1 and sshd (`lab up --hosts systemd`).
    boot: str = "lab-daemon"
    slurm_series: str = versions.DEFAULT_SLURM_SERIES  # whose Slurm images a Slurm role runs

    @property
    def name(self) -> str:
        return contract.container_name(self.lab, self.hostname)

    @property
    def image_role(self) -> str:
        """The role whose image the container runs (a rack runs the node image, both sides of the
        fence the fence image)."""
        if self.boot == "systemd":
            return "host"
        return IMAGE_OF_ROLE.get(self.role, self.role)

    @property
    def image(self) -> str:
        return contract.role_image(self.image_role, self.slurm_series)

    def digest(self, image_id: str) -> str:
        payload = json.dumps({**asdict(self), "image_id": image_id}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def prometheus_spec(lab: str, host_port: int, alertmanager_port: int) -> ContainerSpec:
    """Prometheus with Alertmanager beside it (both published on 127.0.0.1: `lab alerts` reads them);
    the alert receiver writes what Alertmanager delivered to the host's .lab/<lab>/alerts/."""
    return ContainerSpec(
        lab,
        "prometheus",
        "prometheus",
        ports={contract.PROMETHEUS_PORT: host_port, contract.ALERTMANAGER_PORT: alertmanager_port},
        volumes={f"lab-{lab}-prometheus": "/var/lib/prometheus/metrics2"},
        writable_binds={str(contract.alerts_dir(lab)): contract.ALERTS_MOUNT},
    )


def log_volume(lab: str, host: str) -> str:
    """The volume of a Slurm host's SLURM_LOG_DIR: its logs outlive the container (a drill's kill, a
    changed spec), and the egress gateway reads them."""
    return f"lab-{lab}-log-{host}"


def fence_specs(
    lab: str,
    metrics_port: int,
    logs_port: int,
    alerts_port: int,
    log_hosts: list[str],
    log_dirs: dict[str, str] | None = None,
) -> list[ContainerSpec]:
    """Both sides of the fence (signals/egress.md). The site's egress gateway reads the site's Prometheus
    and the logs of ``log_hosts`` (their log volumes) or of ``log_dirs`` (host directory → mount), all
    read-only, and sends what may leave,
    pseudonymised with the lab's key (read-only), keeping its queues on a volume; the centre beyond it
    runs VictoriaMetrics, VictoriaLogs and vmalert (the central rules), published on 127.0.0.1, the
    stores' data on a volume."""
    return [
        ContainerSpec(
            lab,
            contract.EGRESS_HOST,
            contract.EGRESS_HOST,
            volumes={f"lab-{lab}-egress": contract.EGRESS_STATE_DIR},
            read_volumes={log_volume(lab, h): f"{contract.SITE_LOGS_MOUNT}/{h}" for h in log_hosts},
            binds={str(contract.egress_key_dir(lab)): contract.EGRESS_KEY_MOUNT, **(log_dirs or {})},
        ),
        ContainerSpec(
            lab,
            contract.CENTRAL_HOST,
            contract.CENTRAL_HOST,
            ports={
                contract.VICTORIA_METRICS_PORT: metrics_port,
                contract.VICTORIA_LOGS_PORT: logs_port,
                contract.VMALERT_PORT: alerts_port,
            },
            volumes={f"lab-{lab}-central": contract.CENTRAL_DATA_DIR},
        ),
    ]


def slurm_containers(blueprint: Blueprint) -> list[ContainerSpec]:
    lab = blueprint.name
    # Host → nodes, read-only: XID faults (`lab fault`) and job classes (the workload runner).
    # Host → every Slurm container, read-only: the Slurm files, rendered once for the whole lab.
    config = {str(contract.slurm_config_dir(lab)): contract.SLURM_CONFIG_MOUNT}
    shared = {**config, str(contract.shared_dir(lab)): contract.SHARED_MOUNT}
    logs = partial(log_volume, lab)
    specs = [
        ContainerSpec(
            lab,
            "controller",
            "controller",
            ports={contract.SLURM_EXPORTER_PORT: blueprint.ports.slurm_exporter},
            volumes={f"lab-{lab}-ctld": "/var/spool/slurm/ctld", logs("controller"): contract.SLURM_LOG_DIR},
            binds=config,
        ),
        ContainerSpec(lab, "dbd", "dbd", volumes={f"lab-{lab}-mariadb": "/var/lib/mysql"}, binds=config),
        ContainerSpec(
            lab, "restd", "restd", ports={contract.SLURMRESTD_PORT: blueprint.ports.slurmrestd}, binds=config
        ),
        prometheus_spec(lab, blueprint.ports.prometheus, blueprint.ports.alertmanager),
    ]
    node_tmpfs = {
        "/run": "mode=0755",
        contract.DRILL_FULL_MOUNT: f"size={contract.DRILL_FULL_SIZE},mode=0755",
    }
    hosts = blueprint.racks or {node: [node] for node in blueprint.nodes.names}
    role = "rack" if blueprint.racks else "node"
    compute = [
        ContainerSpec(
            lab,
            host,
            role,
            nodes=tuple(members),
            volumes={logs(host): contract.SLURM_LOG_DIR},
            binds=shared,
            tmpfs=node_tmpfs,
        )
        for host, members in hosts.items()
    ]
    if blueprint.egress.enabled:
        ports = blueprint.ports
        log_hosts = ["controller", *hosts]
        specs += fence_specs(lab, ports.central_metrics, ports.central_logs, ports.central_alerts, log_hosts)
    series = blueprint.slurm.version
    return [replace(spec, slurm_series=series) for spec in specs + compute]


# What a machine-like host needs beside its own mounts: systemd mounts its cgroup tree (the host's,
# read-only) and a tmpfs on /run/lock; CAP_SYS_ADMIN lets it mount them (checked on this machine kind:
# `--privileged` is refused, this is enough for `systemctl is-system-running` = running).
MACHINE_TMPFS = {"/run": "mode=0755", "/run/lock": "mode=0755"}
MACHINE_BINDS = {"/sys/fs/cgroup": "/sys/fs/cgroup"}


def machines(specs: list[ContainerSpec], ssh_binds: dict[str, dict[str, str]]) -> list[ContainerSpec]:
    """The same hosts as machine-like ones: no Slurm files mounted (provisioning copies them, as on a real
    host) and no volumes (a machine keeps its own disk, so the egress gateway reads no other host's
    logs); the lab's fault and job-class directory stays,
    and each host gets its SSH keys (``ssh_binds``: host → its key mounts)."""
    config = str(contract.slurm_config_dir(specs[0].lab)) if specs else ""
    return [
        replace(
            spec,
            volumes={},
            read_volumes={},
            binds={
                **{path: mount for path, mount in spec.binds.items() if path != config},
                **MACHINE_BINDS,
                **ssh_binds[spec.hostname],
            },
            tmpfs={**spec.tmpfs, **MACHINE_TMPFS},
            boot="systemd",
        )
        for spec in specs
    ]


def runai_containers(
    model: RunaiBlueprint, kube_build: str, kube_pki: str, rest_keys: str
) -> list[ContainerSpec]:
    """A Run:ai lab: its Prometheus and the one container of the Kubernetes control plane, KAI and
    the Run:ai driver, and (egress on) the fence, whose gateway reads the driver's output directory.
    Read-only: the cached binaries and the lab's credentials; the output directory (events, logs, pod
    resources) is the host's."""
    lab = model.name
    out = str(lab_state_dir(lab) / "runai")
    fence: list[ContainerSpec] = []
    if model.egress.enabled:
        ports = model.ports
        fence = fence_specs(
            lab,
            ports.central_metrics,
            ports.central_logs,
            ports.central_alerts,
            log_hosts=[],
            log_dirs={out: f"{contract.SITE_LOGS_MOUNT}/runai"},
        )
    return [
        prometheus_spec(lab, model.ports.prometheus, model.ports.alertmanager),
        ContainerSpec(
            lab,
            "runai",
            "runai",
            ports={
                contract.RUNAI_API_PORT: model.ports.runai,
                contract.KUBE_APISERVER_PORT: model.ports.kube_apiserver,
                contract.RUNAI_REST_PORT: model.ports.runai_rest,
            },
            binds={
                kube_build: contract.KUBE_BUILD_MOUNT,
                kube_pki: contract.KUBE_PKI_MOUNT,
                rest_keys: contract.RUNAI_REST_KEYS_MOUNT,
            },
            writable_binds={out: contract.RUNAI_OUT_MOUNT},
        ),
        *fence,
    ]
