"""The one place that pins what the lab runs. Images are tagged with the lab version."""

from lab import __version__

LAB_VERSION = __version__
DEBIAN_SUITE = "trixie"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
# Debian 13 trixie's Slurm; every Slurm package in every image is installed at exactly this version.
SLURM_DEB_VERSION = "24.11.5-4+deb13u1"
PROMETHEUS_DEB_VERSION = "2.53.3+ds1-2"
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
