"""Prometheus text exposition exactly as dcgm-exporter renders it (pure: samples in, text out).

Follows ``internal/pkg/rendermetrics/render_metrics.go`` as read at 4.6.0-4.8.3 (commit 7ad58324),
with the ``Hostname`` label name the 4.5.3-4.8.2 tag still used (PR #655 renamed it later):

- families sorted by name, one ``# HELP``/``# TYPE`` block each, only families with samples;
- labels ``gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID], Hostname`` (the
  last only when non-empty), then label-type fields sorted, then attributes sorted;
- a repeated label name or two samples with the same label set fail the whole render (HTTP 500);
- samples ordered by their label signature; values parsed as floats and written the way
  ``expfmt.MetricFamilyToText`` writes them (Go ``strconv`` 'g', shortest). A line (wrapped)::

    DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-…",pci_bus_id="00000000:18:00.0",device="nvidia0",
      modelName="NVIDIA H100 80GB HBM3",Hostname="node-001",DCGM_FI_DRIVER_VERSION="580.95.05"} 31
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

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
from lab.exposition import escape_help, escape_label_value, go_float


class RenderError(ValueError):
    """The exporter would answer this scrape with HTTP 500."""


def sample_labels(sample: Sample) -> list[tuple[str, str]]:
    """The label pairs of one GPU sample in render order; duplicate names are an error."""
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
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise RenderError(f"duplicate label name {duplicate!r}")
    for name, value in pairs:
        _check_utf8(name, value)
    return pairs


def _check_utf8(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:  # undecodable bytes read with surrogateescape
        raise RenderError(f"prometheus label {name!r} has invalid UTF-8 value") from error


def label_signature(pairs: Iterable[tuple[str, str]]) -> str:
    """upstream ``labelSignature``: labels sorted by name then value, length-prefixed (bytes)."""
    return "".join(
        f"{len(name.encode())}:{name}={len(value.encode())}:{value};" for name, value in sorted(pairs)
    )


def _value(counter: Counter, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError as error:
        raise RenderError(
            f"metric family {counter.field_name!r} has non-numeric sample value {raw!r}"
        ) from error
    if math.isnan(value) or math.isinf(value):
        raise RenderError(f"metric family {counter.field_name!r} has non-finite sample value {raw!r}")
    if counter.prom_type == "counter" and value < 0:
        raise RenderError(f"metric family {counter.field_name!r} has negative counter sample {raw}")
    return value


def render(families: Sequence[Counter], samples: Iterable[Sample]) -> str:
    """Render samples of the given families; samples of unknown or label counters are an error."""
    by_name = {family.field_name: family for family in families if not family.is_label}
    lines_by_family: dict[str, list[tuple[str, str]]] = {}
    seen: set[tuple[str, str]] = set()
    # A GPU's label set repeats in every family: build its signature and text once per scrape.
    label_cache: dict[tuple[object, ...], tuple[str, str]] = {}
    for sample in samples:
        name = sample.counter.field_name
        family = by_name.get(name)
        if family is None or family != sample.counter:
            raise RenderError(f"sample for {name!r} does not match a configured metric family")
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
        cached = label_cache.get(key)
        if cached is None:
            pairs = sample_labels(sample)
            text = ",".join(f'{label}="{escape_label_value(value)}"' for label, value in pairs)
            cached = label_cache[key] = (label_signature(pairs), text)
        signature, labels = cached
        if (name, signature) in seen:
            raise RenderError(f"metric family {name!r} has duplicate sample labels {signature}")
        seen.add((name, signature))
        line = f"{name}{{{labels}}} {go_float(_value(family, sample.value))}\n"
        lines_by_family.setdefault(name, []).append((signature, line))
    out: list[str] = []
    for name in sorted(lines_by_family):
        family = by_name[name]
        out.append(f"# HELP {name} {escape_help(family.help)}\n")
        out.append(f"# TYPE {name} {family.prom_type}\n")
        # sort.SliceStable by signature: equal signatures cannot occur (rejected above).
        out.extend(line for _, line in sorted(lines_by_family[name], key=lambda item: item[0]))
    return "".join(out)
