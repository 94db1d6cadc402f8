"""One sample as dcgm-exporter's GPU collector builds it, and the label names that are the contract.

Mirrors upstream ``collector.Metric`` (``internal/pkg/collector/types.go``): identity fields that the
renderer turns into the fixed label prefix, ``labels`` from label-type CSV fields, and
``attributes`` added by the collector (XID) and the transforms (pod mapper, HPC mapper). Frozen:
transforms return new samples and never mutate their input.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.dcgm.counters import Counter

# internal/pkg/rendermetrics/render_metrics.go: the fixed GPU label prefix, in render order.
GPU_LABEL = "gpu"
UUID_LABEL = "UUID"
PCI_BUS_ID_LABEL = "pci_bus_id"
DEVICE_LABEL = "device"
MODEL_NAME_LABEL = "modelName"
MIG_PROFILE_LABEL = "GPU_I_PROFILE"
GPU_INSTANCE_ID_LABEL = "GPU_I_ID"
# "Hostname" until PR #655 (merged after the 4.5.3-4.8.2 tag) renamed it "hostname".
HOSTNAME_LABEL = "Hostname"

# internal/pkg/transformation/const.go
POD_ATTRIBUTE = "pod"
NAMESPACE_ATTRIBUTE = "namespace"
CONTAINER_ATTRIBUTE = "container"
HPC_JOB_ATTRIBUTE = "hpc_job"

# internal/pkg/collector/gpu_collector.go (toMetric, DCGM_FI_DEV_XID_ERRORS only)
ERR_CODE_ATTRIBUTE = "err_code"
ERR_MSG_ATTRIBUTE = "err_msg"

Pairs = tuple[tuple[str, str], ...]


def collector_value(value: int | float) -> str:
    """A DCGM value as the collector's ``toString`` writes it (``gpu_collector.go@4.5.3-4.8.2:373-396``):
    ``%d`` for int64 fields, ``%f`` (six decimals) for doubles; Python's ``f`` and Go's ``%f`` agree."""
    return f"{value:f}" if isinstance(value, float) else str(value)


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of one counter for one GPU (or MIG instance)."""

    counter: Counter
    # The DCGM value as the collector formats it: "%d" for int64 fields, "%f" for doubles.
    value: str
    gpu: str
    gpu_uuid: str
    pci_bus_id: str
    device: str
    model_name: str
    hostname: str
    labels: Pairs = ()
    attributes: Pairs = ()
    mig_profile: str = ""
    gpu_instance_id: str = ""

    def with_attributes(self, extra: Pairs) -> Sample:
        """A copy with ``extra`` attributes set (existing names are overwritten, like a Go map)."""
        merged = dict(self.attributes)
        merged.update(extra)
        # Positional construction: dataclasses.replace() is several times slower per copy.
        return Sample(
            self.counter,
            self.value,
            self.gpu,
            self.gpu_uuid,
            self.pci_bus_id,
            self.device,
            self.model_name,
            self.hostname,
            self.labels,
            tuple(merged.items()),
            self.mig_profile,
            self.gpu_instance_id,
        )
