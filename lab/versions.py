"""The one place that pins what the lab runs. Images are tagged with the lab version."""

from dataclasses import dataclass

from lab import __version__

LAB_VERSION = __version__
DEBIAN_SUITE = "trixie"  # every image but the Slurm ones of another release below
DEBIAN_MIRROR = "http://deb.debian.org/debian"


@dataclass(frozen=True)
class SlurmRelease:
    """A Slurm release series the lab runs: the Debian suite its images are made from and the package
    version every Slurm package in them is installed at, exactly."""

    series: str  # what a blueprint names: `slurm: {version: "26.05"}`
    debian_suite: str
    deb_version: str
    # debootstrap's script for the suite, where the host's debootstrap may predate it (bookworm's has no
    # `forky`; Debian's own debootstrap runs every testing suite with the `sid` script).
    debootstrap_script: str = ""
    # The suite's Release file on the mirror is past its Valid-Until (testing's is re-signed weekly; a
    # mirror that stopped syncing serves it expired), so apt in its images must not refuse it.
    release_may_be_expired: bool = False
    # slurmctld serves its own metrics (metrics/openmetrics, from 25.11; signals/slurm-native.md).
    native_metrics: bool = False
    # PySlurm builds per Slurm major.minor; without a release for this one, the workload submits through
    # slurmrestd (docs/workload.md).
    pyslurm: bool = False
    # slurmctld refuses to start again (fatal "No Assoc usage file … to recover") when a core state file
    # is missing and the cluster has started before: from 25.05 (SchedMD/slurm 4344e6addc, "fatal() on
    # startup if certain core state files do not exist and it is not the first start of the cluster";
    # load_assoc_usage, src/common/assoc_mgr.c@slurm-26-05-3-1). It writes assoc_usage in its full state
    # save, every PERIODIC_CHECKPOINT (300 s, src/slurmctld/slurmctld.h): killed in its first five
    # minutes, it stays down until started with -i.
    restart_needs_full_save: bool = False


SLURM_RELEASES = {
    # Debian 13 trixie's Slurm, the default.
    "24.11": SlurmRelease("24.11", "trixie", "24.11.5-4+deb13u1", pyslurm=True),
    # Debian forky's (and sid's) Slurm: `apt-cache policy slurmctld` in a forky root, 2026-12-07.
    "26.05": SlurmRelease(
        "26.05",
        "forky",
        "26.05.5-1",
        debootstrap_script="sid",
        release_may_be_expired=True,
        native_metrics=True,
        restart_needs_full_save=True,
    ),
}
DEFAULT_SLURM_SERIES = "24.11"
SLURM_DEB_VERSION = SLURM_RELEASES[DEFAULT_SLURM_SERIES].deb_version  # PySlurm's wheel is built against it
PROMETHEUS_DEB_VERSION = "2.53.3+ds1-2"
# Debian trixie's Alertmanager (`apt-cache policy prometheus-alertmanager` in the Prometheus image).
ALERTMANAGER_DEB_VERSION = "0.28.1+ds-1"
# SckyzO/slurm_exporter: `go install` of its module, else `go build` of the tag archive
# (lab/slurm_exporter/binary.py).
SLURM_EXPORTER_MODULE = "github.com/sckyzo/slurm_exporter/cmd/slurm_exporter"
SLURM_EXPORTER_VERSION = "v1.8.4"
SLURM_EXPORTER_COMMIT = "b535433eb2f290f3e7a6c4ce953892a172619861"  # the tag's commit (--version "revision")
SLURM_EXPORTER_BRANCH = "release-1.8"  # the branch the tag is on (--version "branch")
# The unmodified tag archive (`git archive --prefix=slurm_exporter-1.8.4/ v1.8.4`);
# ../shared/vendor/PROVENANCE.md gives its provenance.
SLURM_EXPORTER_ARCHIVE = "slurm_exporter-1.8.4.tar.gz"
SLURM_EXPORTER_ARCHIVE_PREFIX = "slurm_exporter-1.8.4"
SLURM_EXPORTER_ARCHIVE_SHA256 = "fa752e9de968d568cc7a68203f853de1dc020366a8860e8b54af03c9af011f24"
# Prometheus' own web UI at the tag of Debian's package (upstream 2.53.3): Debian ships none. Built from
# the tag's `web/ui` (`git archive … v2.53.3 web/ui`; ../shared/vendor/PROVENANCE.md) with npm, cached
# (lab/prometheus_ui/build.py), installed where Debian's install-ui.sh puts a release's UI tarball.
PROMETHEUS_UI_VERSION = "v2.53.3"
PROMETHEUS_UI_COMMIT = "1491d29fb1e8f8acbab29fd54fd4ce9be2cbd7bc"  # the tag's commit
PROMETHEUS_UI_ARCHIVE = "prometheus-web-ui-2.53.3.tar.gz"
PROMETHEUS_UI_ARCHIVE_PREFIX = "prometheus-web-ui-2.53.3"
PROMETHEUS_UI_ARCHIVE_SHA256 = "2c1ed69dc6b8c01411aafb60faf7bd8046727e71b05db9b548eee3fbb50c26b7"
# PySlurm, the workload generator's way into Slurm (lab/workload/pyslurm_wheel.py): its release for Slurm
# 24.11.x (pyslurm's major.minor must equal Slurm's; PyPI carries none for 24.11). Built once from the
# unmodified tag archive (`git archive --prefix=pyslurm-24.11.0/ v24.11.0`) against libslurm-dev at
# SLURM_DEB_VERSION, with Debian's Cython (the tag does not compile with Cython 3.2+).
PYSLURM_VERSION = "v24.11.0"
PYSLURM_COMMIT = "b3006ba96fe7c599d9263a2ad3149300c9ea96b7"  # the tag's commit
PYSLURM_ARCHIVE = "pyslurm-24.11.0.tar.gz"
PYSLURM_ARCHIVE_PREFIX = "pyslurm-24.11.0"
PYSLURM_ARCHIVE_SHA256 = "d73656b234ac02981e95bb467c069d2f9a3fe32e86a26398dc3a41ef36b6ae50"
# NVIDIA dcgm-exporter, the release the DCGM shim renders as (lab/dcgm). Its unmodified tag archive and
# the go-dcgm tree its go.mod requires build the conformance test's renderer (tests/conformance/).
DCGM_EXPORTER_TAG = "4.5.3-4.8.2"
DCGM_EXPORTER_ARCHIVE = "dcgm-exporter-4.5.3-4.8.2.tar.gz"
DCGM_EXPORTER_ARCHIVE_SHA256 = "f7b828ea567af52be73d8311b0e99e5ae22de369816504e1a8b858c5c5c10ced"
GO_DCGM_ARCHIVE = "go-dcgm-ec245c09fe3e.tar.gz"  # v0.0.0-20260422145128-ec245c09fe3e
GO_DCGM_ARCHIVE_SHA256 = "0f7d1e8f070c015cef5fb688046e6413e3d29a9ab1220a2ed0443da39f078df6"
# The Kubernetes path of a Run:ai lab (lab/kube): a real control plane and the real KAI Scheduler,
# built once per version set (lab/kube_host/binaries.py) and cached; lab/kube_host/gomod/ holds the wrapper
# modules (go.mod, go.sum) for what `go install` refuses (replace directives) or the proxy lists not.
KUBERNETES_VERSION = "v1.34.4"  # kube-apiserver, kube-controller-manager (k8s.io/kubernetes)
KUBERNETES_STAGING_VERSION = "v0.34.4"  # the k8s.io/* staging modules of that release
KAI_SCHEDULER_VERSION = "v0.13.0"
KAI_SCHEDULER_COMMIT = "5d35ecab74e693d6f40309d2e23a68b8ac138571"
KAI_SCHEDULER_ARCHIVE = "kai-scheduler-0.13.0.tar.gz"  # ../shared/vendor: the proxy refuses the module
KAI_SCHEDULER_ARCHIVE_PREFIX = "kai-scheduler-0.13.0"
KAI_SCHEDULER_ARCHIVE_SHA256 = "c16dc3807abd037872aa63c9fd50ad39125ca65124fea4738c7994c0cbfa3627"
KWOK_MODULE = "sigs.k8s.io/kwok"
KWOK_VERSION = "v0.7.0"
KUBE_STATE_METRICS_VERSION = "v2.15.0"  # v2.16.0 fails its checksum here, v2.17.0 is refused
# Kubeflow's training operator: PyTorchJobs, the kind KAI's podgrouper gangs (plugins/kubeflow/pytorch).
# v1.9.3 is the version KAI v0.13.0's go.mod requires, so the podgrouper reads the types it was built
# against; the module proxy serves it (v1.8.1 builds here too).
TRAINING_OPERATOR_MODULE = "github.com/kubeflow/training-operator"
TRAINING_OPERATOR_VERSION = "v1.9.3"
# etcd: Debian trixie's package in the Run:ai image (no build).
ETCD_DEB_PACKAGE = "etcd-server"
# The site's centre beyond the fence (lab/central/builds.py): the central stores and the egress gateway,
# built on the host once per version set and cached. Each pin was checked against the module proxy here
# (2026-12-06): `go list -m -versions` lists it, and `go list -m -json` and `go mod download -json` of
# <module>@<version> serve it (the release times below are the proxy's).
# VictoriaMetrics single-node, the central metrics store, and vmalert, its rules, from the same module;
# Apache-2.0 (the module's LICENSE). The proxy lists v1.151.0 (2026-08-28; go.mod: go 1.26.6) to v1.154.1.
VICTORIA_METRICS_MODULE = "github.com/VictoriaMetrics/VictoriaMetrics"
VICTORIA_METRICS_VERSION = "v1.151.0"
# VictoriaLogs, the central log store; Apache-2.0. The proxy lists v1.52.1 and v1.52.2 (2026-07-16; go.mod:
# go 1.26.5). It takes OTLP/HTTP logs in protobuf at /insert/opentelemetry/v1/logs (signals/egress.md).
VICTORIA_LOGS_MODULE = "github.com/VictoriaMetrics/VictoriaLogs"
VICTORIA_LOGS_VERSION = "v1.52.2"
# The egress gateway: an OpenTelemetry Collector made by the collector's own builder; Apache-2.0. Every
# collector module at one release: core v0.165.0 (2026-11-06; go.mod: go 1.26.0; the builder of that
# release), its stable modules v1.71.0 (the confmap providers; the builder's own default at v0.165.0,
# internal/builder/config.go), contrib v0.165.1 (2026-11-09), the newest each lists here.
OTELCOL_BUILDER_MODULE = "go.opentelemetry.io/collector/cmd/builder"
OTELCOL_CORE_MODULE = "go.opentelemetry.io/collector"
OTELCOL_CORE_VERSION = "v0.165.0"
OTELCOL_CORE_STABLE_VERSION = "v1.71.0"
OTELCOL_CONTRIB_MODULE = "github.com/open-telemetry/opentelemetry-collector-contrib"
OTELCOL_CONTRIB_VERSION = "v0.165.1"
