"""The lab's contract: the ports its daemons listen on inside their containers, what is mounted where,
the paths in which the constructs hand files to each other, and the names of its containers, networks
and images. Python reads these names; Ansible reads the same values as ``lab_contract`` from
``ansible/group_vars/all/contract.yml``, which ``just gen`` writes (a unit test fails when it is stale).

Stdlib only: the node and Run:ai images carry this module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab import paths, versions

# Inside the containers (published ports bind 127.0.0.1 on the host; the host side is the blueprint's).
# slurmctld's default SlurmctldPort (slurm.conf(5)); from 25.11 it also answers plain HTTP there: its own
# metrics on these endpoints (src/slurmctld/http.c; signals/slurm-native.md).
SLURMCTLD_PORT = 6817
SLURMCTLD_METRICS_ENDPOINTS = ("jobs", "nodes", "partitions", "scheduler", "jobs-users-accts")
# Where the Prometheus host keeps the JWT those endpoints take (MetricsAuthUsers; the prometheus role).
SLURMCTLD_METRICS_TOKEN = "/etc/prometheus/slurmctld-metrics.jwt"
SLURMDBD_PORT = 6819  # slurmdbd's default DbdPort (slurmdbd.conf man page); the controller waits for it
SLURMRESTD_PORT = 6820  # slurmrestd's listen port in the restd container
PROMETHEUS_PORT = 9090  # Prometheus' default --web.listen-address
ALERTMANAGER_PORT = 9093  # Alertmanager's default --web.listen-address, in the Prometheus container
# The lab's webhook receiver (lab/alert_receiver.py), on 127.0.0.1 beside Alertmanager, never published:
# 9094 is Alertmanager's cluster port, so the next one.
ALERT_RECEIVER_PORT = 9095
SLURM_EXPORTER_PORT = 9341  # the exporter's default :9341, Prometheus' registered Slurm exporter port
DCGM_EXPORTER_PORT = 9400  # dcgm-exporter's default listen port (:9400)
RUNAI_API_PORT = 9590  # the Run:ai driver's runai_* /metrics (docs/runai.md)
# The driver's Run:ai REST API (Metrics and Telemetry, lab/runai/api), beside its /metrics port.
RUNAI_REST_PORT = 9589
RUNAI_DCGM_FIRST_PORT = 9591  # node i of a Run:ai blueprint serves its DCGM target on 9591 + i
KUBE_APISERVER_PORT = 6443  # kube-apiserver's --secure-port default, in the Run:ai lab's container
# The site's centre beyond the fence (signals/egress.md), in its own container: VictoriaMetrics',
# VictoriaLogs' and vmalert's (the central rules) default -httpListenAddr ports (:8428, :9428, :8880).
VICTORIA_METRICS_PORT = 8428
VICTORIA_LOGS_PORT = 9428
VMALERT_PORT = 8880

# The other Kubernetes processes of the Run:ai lab (lab/kube/controlplane.py), in its container and never
# published. KAI's binaries (v0.13.0 cmd/*/app/options.go), kube-state-metrics and the training operator
# all default to :8080 for metrics and :8081 for health probes, telemetry or KAI's plugin server, so
# each process gets its own ports here.
ETCD_CLIENT_PORT = 2379  # etcd's default --listen-client-urls port, on 127.0.0.1 only
ETCD_PEER_PORT = 2380  # etcd's default --listen-peer-urls port, on 127.0.0.1 only
# The port each process serves its /metrics on (the API server: its clients), by process name.
KUBE_PORTS = {
    "kube-apiserver": KUBE_APISERVER_PORT,
    # --port defaults to 8080 (v2.15.0 pkg/options/options.go), which the podgroup controller keeps.
    "kube-state-metrics": 8085,
    # kwokctl's own --server-address port for kwok (v0.7.0 pkg/kwokctl/components/kwok_controller.go).
    "kwok": 10247,
    "kai-binder": 8280,  # --metrics-bind-address, default :8080
    "kai-podgrouper": 8282,  # --metrics-bind-address, default :8080
    "kai-queuecontroller": 8284,  # --metrics-listen-address, default :8080
    # controller-runtime's default :8080: the binary's --metrics-bind-address does not reach its manager
    # at v0.13.0 (cmd/podgroupcontroller/app/app.go), so it keeps 8080 and nothing else here may take it.
    "kai-podgroupcontroller": 8080,
    # --metrics-bind-address, default :8080 (v1.9.3 cmd/training-operator.v1/main.go).
    "training-operator": 8288,
}
# Health probes (--health-probe-bind-address, default :8081) and kube-state-metrics' own metrics
# (--telemetry-port, default 8081, on 127.0.0.1 only), by process name.
KUBE_HEALTH_PORTS = {
    "kube-state-metrics": 8086,
    "kai-binder": 8281,
    "kai-podgrouper": 8283,
    "kai-podgroupcontroller": 8287,
    "training-operator": 8289,
}
TRAINING_OPERATOR_WEBHOOK_PORT = 9443  # its --webhook-server-port default (v1.9.3)
# One KAI scheduler per node pool: pool i serves its metrics (--listen-address, default :8080) on
# 8180 + i and its plugin server (--plugin-server-port, default 8081) on 8190 + i.
KAI_SCHEDULER_FIRST_PORT = 8180
KAI_SCHEDULER_PLUGIN_FIRST_PORT = 8190
# 127.0.0.1 on the host: beside a Slurm lab's 9090, and the API server off 6443 (a real cluster's).
RUNAI_HOST_PORTS = {
    "runai": RUNAI_API_PORT,
    "prometheus": 9190,
    "alertmanager": 9193,
    "kube-apiserver": 16443,
    "runai-rest": RUNAI_REST_PORT,
    # The centre beyond the fence, 100 above a Slurm lab's, as Prometheus' 9190 is above 9090.
    "central-metrics": VICTORIA_METRICS_PORT + 100,
    "central-logs": VICTORIA_LOGS_PORT + 100,
    "central-alerts": VMALERT_PORT + 100,
}

# Mounts and hand-over paths.
SHARED_MOUNT = "/var/lib/aifactory-lab/shared"  # host → nodes, read-only: XID faults and job classes
# A small tmpfs on every node, empty but for `lab drill mapping-dir-faults`, which fills it (ENOSPC).
DRILL_FULL_MOUNT = "/var/lib/aifactory-lab/drill-full"
DRILL_FULL_SIZE = "64k"
XID_DIR = "xid"  # under SHARED_MOUNT: `lab fault xid` writes, the shim reads
THROTTLE_DIR = "throttle"  # under SHARED_MOUNT: `lab fault throttle` writes, the shim reads
PCIE_REPLAY_DIR = "pcie"  # under SHARED_MOUNT: `lab fault pcie` writes, the shim reads
JOBS_DIR = "jobs"  # under SHARED_MOUNT
JOB_CLASSES = "jobs/classes.json"  # under SHARED_MOUNT: the workload runner writes, the shim reads
RUNAI_OUT_MOUNT = "/var/lib/aifactory-lab/runai"  # Run:ai lab → host: events, logs, pod resources
# The alert receiver → host: one JSON line per Alertmanager notification (`lab alerts` reads it).
ALERTS_MOUNT = "/var/lib/aifactory-lab/alerts"
ALERTS_FILE = "notifications.jsonl"  # under ALERTS_MOUNT
KUBE_BUILD_MOUNT = (
    "/opt/kube"  # host → Run:ai container, read-only: bin/, stages/, kai/ (lab.kube_host.binaries)
)
KUBE_PKI_MOUNT = "/etc/kubernetes/pki"  # host → Run:ai container, read-only: the lab's certificates
# Host → Run:ai container, read-only: the REST API's application credentials and token signing key.
RUNAI_REST_KEYS_MOUNT = "/etc/aifactory-lab/runai-rest"
# Host → the egress gateway's container, read-only: the lab's pseudonym key (lab.egress.key), a directory
# so that `lab egress rotate-key`'s atomic replacement is seen inside.
EGRESS_KEY_MOUNT = "/etc/aifactory-lab/egress-key"
EGRESS_HOST = "egress"  # the host (and inventory group) of the site's egress gateway
CENTRAL_HOST = "central"  # the host (and inventory group) of the centre beyond the fence
SLURM_LOG_DIR = "/var/log/slurm"  # the Slurm daemons' and node scripts' logs, a volume per host
# The egress gateway's read-only view of every Slurm host's SLURM_LOG_DIR: SITE_LOGS_MOUNT/<host>/. It
# stands in for a site's log agent on each host (signals/egress.md, "The job log at the centre"). In a
# Run:ai lab it sees the driver's output directory (events, every process's log) at SITE_LOGS_MOUNT/runai/.
SITE_LOGS_MOUNT = "/var/log/site"
EGRESS_STATE_DIR = "/var/lib/otelcol-lab"  # the gateway's queues and file offsets (file_storage), a volume
CENTRAL_DATA_DIR = "/var/lib/central"  # the centre's stores' data (victoria-metrics/, victoria-logs/)
JOB_MAPPING_DIR = "/var/lib/dcgm-exporter/job-mapping"  # the GPU Operator's hpcJobMapping default
# Each node's GPUs as `nvidia-smi --query-gpu=index,uuid --format=csv,noheader` prints them (%n = the node),
# written at boot (in the lab: by the shim when it starts); the Prolog's line names the UUIDs from it.
GPU_UUIDS_FILE = "/run/nvidia-gpu-uuids/%n.csv"
# Host → Slurm containers, read-only: slurm.conf, gres.conf and cgroup.conf, rendered once per lab. The
# images link /etc/slurm/<file> here, so every daemon and client finds them at Debian's usual path.
SLURM_CONFIG_MOUNT = "/etc/slurm-lab"
SLURM_CONFIG_FILES = ("slurm.conf", "gres.conf", "cgroup.conf")

# Names and labels of what the lab creates in the container engine.
REPOSITORY = "aifactory-lab"
LABEL_LAB = "org.aifactory-lab.lab"
LABEL_ROLE = "org.aifactory-lab.role"
LABEL_HOST = "org.aifactory-lab.host"
LABEL_SPEC = "org.aifactory-lab.blueprint"
LABEL_BOOT = "org.aifactory-lab.boot"  # lab-daemon (container-native) | systemd (machine-like host)

# Container port → the service name `lab status` and `lab up` print its URL under.
SERVICE_BY_PORT = {
    SLURMRESTD_PORT: "slurmrestd",
    PROMETHEUS_PORT: "prometheus",
    ALERTMANAGER_PORT: "alertmanager",
    SLURM_EXPORTER_PORT: "slurm_exporter",
    RUNAI_API_PORT: "runai",
    RUNAI_REST_PORT: "runai-rest",
    KUBE_APISERVER_PORT: "kube-apiserver",
    VICTORIA_METRICS_PORT: "central-metrics",
    VICTORIA_LOGS_PORT: "central-logs",
    VMALERT_PORT: "central-alerts",
}

ANSIBLE_VARS_FILE = paths.ANSIBLE_DIR / "group_vars" / "all" / "contract.yml"


def container_name(lab: str, hostname: str) -> str:
    return f"lab-{lab}-{hostname}"


def network_name(lab: str) -> str:
    return f"lab-{lab}"


# The images a Slurm release of its own builds: every one that installs Slurm packages, and the base
# they stand on (made from the release's Debian suite).
SLURM_RELEASE_IMAGES = ("base", "slurm-common", "controller", "dbd", "restd", "node", "pyslurm-build")


def image_tag(name: str, slurm_series: str = versions.DEFAULT_SLURM_SERIES) -> str:
    """``name``'s tag; a Slurm image of a release other than the default carries its series."""
    variant = slurm_series != versions.DEFAULT_SLURM_SERIES and name in SLURM_RELEASE_IMAGES
    return f"{REPOSITORY}/{name}:{versions.LAB_VERSION}" + (f"-slurm-{slurm_series}" if variant else "")


def role_image(role: str, slurm_series: str = versions.DEFAULT_SLURM_SERIES) -> str:
    return image_tag(role, slurm_series)


def kai_scheduler_port(pool_index: int) -> int:
    """The metrics port of the KAI scheduler of the blueprint's node pool ``pool_index``."""
    return KAI_SCHEDULER_FIRST_PORT + pool_index


def kai_scheduler_plugin_port(pool_index: int) -> int:
    return KAI_SCHEDULER_PLUGIN_FIRST_PORT + pool_index


def runai_dcgm_port(node_index: int) -> int:
    """The port of the DCGM target of the Run:ai blueprint's node ``node_index`` (pools in order)."""
    return RUNAI_DCGM_FIRST_PORT + node_index


def shared_dir(lab: str) -> Path:
    """The host side of SHARED_MOUNT."""
    return paths.lab_state_dir(lab) / "shared"


def slurm_config_dir(lab: str) -> Path:
    """The host side of SLURM_CONFIG_MOUNT, where the slurm_common role renders the lab's files."""
    return paths.lab_state_dir(lab) / "slurm-config"


def alerts_dir(lab: str) -> Path:
    """The host side of ALERTS_MOUNT."""
    return paths.lab_state_dir(lab) / "alerts"


def egress_key_dir(lab: str) -> Path:
    """The host side of EGRESS_KEY_MOUNT (lab.egress.key keeps the key file there)."""
    return paths.lab_state_dir(lab) / "keys" / "egress"


def ansible_vars() -> dict[str, Any]:
    """What the roles read as ``lab_contract``."""
    return {
        "lab_contract": {
            "ports": {
                "slurmdbd": SLURMDBD_PORT,
                "slurmrestd": SLURMRESTD_PORT,
                "prometheus": PROMETHEUS_PORT,
                "alertmanager": ALERTMANAGER_PORT,
                "alert_receiver": ALERT_RECEIVER_PORT,
                "slurm_exporter": SLURM_EXPORTER_PORT,
                "dcgm_exporter": DCGM_EXPORTER_PORT,
                "runai_api": RUNAI_API_PORT,
                "runai_rest": RUNAI_REST_PORT,
                "runai_dcgm_first": RUNAI_DCGM_FIRST_PORT,
                "victoria_metrics": VICTORIA_METRICS_PORT,
                "victoria_logs": VICTORIA_LOGS_PORT,
                "vmalert": VMALERT_PORT,
            },
            "mounts": {
                "shared": SHARED_MOUNT,
                "runai_out": RUNAI_OUT_MOUNT,
                "runai_rest_keys": RUNAI_REST_KEYS_MOUNT,
                "alerts": ALERTS_MOUNT,
                "slurm_config": SLURM_CONFIG_MOUNT,
                "egress_key": EGRESS_KEY_MOUNT,
                "egress_state": EGRESS_STATE_DIR,
                "site_logs": SITE_LOGS_MOUNT,
                "central_data": CENTRAL_DATA_DIR,
            },
            "slurm_config_files": list(SLURM_CONFIG_FILES),
            "paths": {
                "job_mapping_dir": JOB_MAPPING_DIR,
                "job_classes": JOB_CLASSES,
                "xid_dir": XID_DIR,
                "throttle_dir": THROTTLE_DIR,
                "pcie_replay_dir": PCIE_REPLAY_DIR,
                "alerts_file": ALERTS_FILE,
            },
            # The Debian packages the roles install on hosts that do not carry them (--hosts systemd).
            "packages": {
                "slurm": versions.SLURM_DEB_VERSION,
                "prometheus": versions.PROMETHEUS_DEB_VERSION,
                "alertmanager": versions.ALERTMANAGER_DEB_VERSION,
            },
        }
    }


def ansible_vars_text() -> str:
    # JSON is YAML: no YAML library is needed to write it, and the file diffs line by line.
    header = "# Generated from lab/contract.py by `just gen`; do not edit (a unit test checks it).\n"
    return header + json.dumps(ansible_vars(), indent=2, sort_keys=True) + "\n"


def write_ansible_vars(path: Path = ANSIBLE_VARS_FILE) -> None:
    paths.atomic_write(path, ansible_vars_text(), mode=0o644)
