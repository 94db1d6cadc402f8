"""Prometheus text exposition exactly as dcgm-exporter 4.5.3-4.8.2 renders it (pure: samples in, text out).

The tag renders with Go's ``text/template`` (``internal/pkg/rendermetrics/render_metrics.go@4.5.3-4.8.2``:
``gpuMetricsFormat`` :42-58, ``RenderGroup`` :141-159) over ``collector.MetricsByCounter``, a map from
``counters.Counter`` to the samples of that counter. What that gives, byte for byte (a conformance test
compares this module with the tag's own code, ``tests/conformance/``):

- families in ``text/template``'s map order: keys sorted field by field, so by DCGM **field id** first
  (``Counter.FieldID``), not by name; one ``# HELP name help`` / ``# TYPE name type`` pair each (a help
  that is empty leaves the trailing space);
- series in the order the collector and the transforms appended them: GPU index, then one copy per
  ``hpc_job`` line in file order; nothing is sorted, nothing is dropped, so a job id listed twice in a
  mapping file gives the same series twice (HTTP 200; see signals/dcgm.md);
- labels ``gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID], [Hostname]``, then the
  label-type fields sorted by name, then the attributes sorted by name;
- values verbatim: the collector's strings (``%d`` for int64 fields, ``%f`` for doubles), never re-parsed;
- no escaping at all (``text/template``, not ``html/template``): a ``"``, ``\\`` or newline in a label
  value goes out raw and makes the scrape unparsable, a defect of the tag the lab's prolog never writes.

No blank lines; every series line ends with ``\\n``. A line (wrapped)::

    DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-…",pci_bus_id="00000000:18:00.0",device="nvidia0",
      modelName="NVIDIA H100 80GB HBM3",Hostname="node-001",DCGM_FI_DRIVER_VERSION="580.95.05"} 31
"""

from __future__ import annotations

from collections.abc import Iterable

from lab.dcgm.counters import Counter
from lab.dcgm.samples import (
    DEVICE_LABEL,
    GPU_INSTANCE_ID_LABEL,
    GPU_LABEL,
    HOSTNAME_LABEL,
    MIG_PROFILE_LABEL,
    MODEL_NAME_LABEL,
    PCI_BUS_ID_LABEL,
    UUID_LABEL,
    Sample,
)


def sample_labels(sample: Sample) -> list[tuple[str, str]]:
    """The label pairs of one GPU sample in the template's order (a name in both maps comes twice)."""
    pairs = [
        (GPU_LABEL, sample.gpu),
        (UUID_LABEL, sample.gpu_uuid),
        (PCI_BUS_ID_LABEL, sample.pci_bus_id),
        (DEVICE_LABEL, sample.device),
        (MODEL_NAME_LABEL, sample.model_name),
    ]
    if sample.mig_profile:
        pairs += [(MIG_PROFILE_LABEL, sample.mig_profile), (GPU_INSTANCE_ID_LABEL, sample.gpu_instance_id)]
    if sample.hostname:
        pairs.append((HOSTNAME_LABEL, sample.hostname))
    pairs += sorted(sample.labels)
    pairs += sorted(sample.attributes)
    return pairs


def render(samples: Iterable[Sample]) -> str:
    """The ``/metrics`` text of these samples, in the order the tag's template writes them."""
    by_counter: dict[Counter, list[str]] = {}
    # A GPU's label set repeats in every family: build its text once per scrape.
    label_cache: dict[tuple[object, ...], str] = {}
    for sample in samples:
        key = (
            sample.gpu,
            sample.gpu_uuid,
            sample.pci_bus_id,
            sample.device,
            sample.model_name,
            sample.mig_profile,
            sample.gpu_instance_id,
            sample.hostname,
            sample.labels,
            sample.attributes,
        )
        labels = label_cache.get(key)
        if labels is None:
            labels = label_cache[key] = ",".join(f'{name}="{value}"' for name, value in sample_labels(sample))
        name = sample.counter.field_name
        by_counter.setdefault(sample.counter, []).append(f"{name}{{{labels}}} {sample.value}\n")
    out: list[str] = []
    for counter in sorted(by_counter, key=Counter.sort_key):
        out.append(
            f"# HELP {counter.field_name} {counter.help}\n# TYPE {counter.field_name} {counter.prom_type}\n"
        )
        out.extend(by_counter[counter])
    return "".join(out)
