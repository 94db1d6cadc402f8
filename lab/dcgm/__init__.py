"""Fake-GPU DCGM shim: serves what dcgm-exporter 4.5.3-4.8.2 serves, from emulated H100s.

stdlib only (it is copied into Debian trixie node containers and run as ``python3 -m lab.dcgm``),
so nothing here may import the rest of ``lab``. Data flow per scrape, one module per step:

    counters (CSV) -> gpu_model (values) -> kubernetes / hpc transforms (pure) -> rendermetrics (pure)
    -> server (HTTP)

Provenance of every name, label and behaviour: ``signals/dcgm.md``.
"""

# The exporter release the shim emulates, and the upstream commits the code was checked against.
UPSTREAM_TAG = "4.5.3-4.8.2"
# Last verified commit before the tag (chart 4.8.1) and the release after it (4.6.0-4.8.3, PR #711).
UPSTREAM_BEFORE_COMMIT = "1f7abdb7dc0f86f3cf7853995b0d262fd3e80bc6"
UPSTREAM_AFTER_COMMIT = "7ad58324b4447b64dc3dedf946b889b648b7f476"
