"""Fake-GPU DCGM shim: serves what dcgm-exporter 4.5.3-4.8.2 serves, from emulated H100s.

stdlib only (it is copied into Debian trixie node containers and run as ``python3 -m lab.dcgm``),
so nothing here may import the rest of ``lab`` beyond the image's modules (``lab.versions``,
``lab.contract``). Data flow per scrape, one module per step:

    counters (CSV) -> gpu_model (values) -> kubernetes / hpc transforms (pure) -> rendermetrics (pure)
    -> server (HTTP)

Provenance of every name, label and behaviour: ``signals/dcgm.md``.
"""

from lab import versions

# The exporter release the shim emulates, read at its tag (commit 691c9276, ../shared/vendor/).
UPSTREAM_TAG = versions.DCGM_EXPORTER_TAG
