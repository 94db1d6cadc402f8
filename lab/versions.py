"""The one place that pins what the lab runs. Images are tagged with the lab version."""

from lab import __version__

LAB_VERSION = __version__
DEBIAN_SUITE = "trixie"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# Debian 13 trixie's Slurm; every Slurm package in every image is installed at exactly this version.
SLURM_DEB_VERSION = "24.11.5-4+deb13u1"
PROMETHEUS_DEB_VERSION = "2.53.3+ds1-2"
# Built from its Go module when the Go module proxy serves it (see lab/exporter.py).
SLURM_EXPORTER_MODULE = "github.com/sckyzo/slurm_exporter/cmd/slurm_exporter"
SLURM_EXPORTER_VERSION = "v1.8.4"
