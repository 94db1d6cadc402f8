"""Exposition as the tag's text/template renders it: real exporter output reproduced byte for byte,
family order by field id, series in input order, values and label values verbatim.

tests/conformance/test_dcgm_tag.py compares the same renderer with the tag's own Go code."""

from __future__ import annotations

import pytest

from lab.dcgm.counters import Counter
from lab.dcgm.rendermetrics import render
from lab.dcgm.samples import Sample

from .dcgm_testing import FIXTURES, parse_line, sample_lines

FIXED = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE", "GPU_I_ID", "Hostname")


def sample_from_line(line: str, counter: Counter) -> Sample:
    """Rebuild the Sample the exporter held for a captured line (label fields start with DCGM_)."""
    parsed = parse_line(line)
    fixed = {key: value for key, value in parsed.labels if key in FIXED}
    labels = tuple((k, v) for k, v in parsed.labels if k.startswith("DCGM_"))
    attributes = tuple((k, v) for k, v in parsed.labels if k not in FIXED and not k.startswith("DCGM_"))
    return Sample(
        counter,
        parsed.value,
        fixed["gpu"],
        fixed["UUID"],
        fixed["pci_bus_id"],
        fixed["device"],
        fixed["modelName"],
        fixed.get("Hostname", ""),
        labels,
        attributes,
        fixed.get("GPU_I_PROFILE", ""),
        fixed.get("GPU_I_ID", ""),
    )


def families_of(text: str) -> dict[str, Counter]:
    helps = {}
    types = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[len("# HELP ") :].partition(" ")
            helps[name] = help_text
        elif line.startswith("# TYPE "):
            name, _, prom_type = line[len("# TYPE ") :].partition(" ")
            types[name] = prom_type
    return {name: Counter(name, types[name], helps[name]) for name in helps}


@pytest.mark.parametrize("fixture", ["h100-kubernetes-issue-490.prom", "h100-20c-kubernetes-vks.prom"])
def test_captured_exporter_output_is_rendered_byte_for_byte(fixture: str) -> None:
    text = (FIXTURES / fixture).read_text()
    families = families_of(text)
    samples = [sample_from_line(line, families[parse_line(line).name]) for line in sample_lines(text)]

    assert render(samples) == text


def test_every_fixture_file_is_covered_by_a_test() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.prom")) == [
        "h100-20c-kubernetes-vks.prom",
        "h100-kubernetes-issue-490.prom",
    ]
    assert (FIXTURES / "PROVENANCE.md").is_file()


GAUGE = Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).")
ENERGY = Counter(
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."
)
POWER = Counter("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).")
XID = Counter("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.")


def gpu_sample(counter: Counter = GAUGE, value: str = "31", **kwargs: object) -> Sample:
    fields: dict[str, object] = {
        "gpu": "0",
        "gpu_uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000",
        "pci_bus_id": "00000000:18:00.0",
        "device": "nvidia0",
        "model_name": "NVIDIA H100 80GB HBM3",
        "hostname": "node-001",
        "labels": (("DCGM_FI_DRIVER_VERSION", "580.95.05"),),
    }
    fields.update(kwargs)
    return Sample(counter, value, **fields)  # type: ignore[arg-type]


def test_label_order_is_fixed_prefix_then_label_fields_then_sorted_attributes() -> None:
    sample = gpu_sample(
        attributes=(("pod", "p"), ("hpc_job", "42"), ("container", "c"), ("namespace", "n")),
        mig_profile="1g.10gb",
        gpu_instance_id="9",
    )
    line = sample_lines(render([sample]))[0]
    assert [key for key, _ in parse_line(line).labels] == [
        "gpu",
        "UUID",
        "pci_bus_id",
        "device",
        "modelName",
        "GPU_I_PROFILE",
        "GPU_I_ID",
        "Hostname",
        "DCGM_FI_DRIVER_VERSION",
        "container",
        "hpc_job",
        "namespace",
        "pod",
    ]


def test_families_come_in_field_id_order_not_by_name() -> None:
    # Field ids (go-dcgm const_fields.go): GPU_TEMP 150, POWER_USAGE 155, TOTAL_ENERGY 156, XID 230.
    text = render(
        [gpu_sample(XID, "0"), gpu_sample(ENERGY, "5"), gpu_sample(POWER, "72.500000"), gpu_sample()]
    )
    assert [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")] == [
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_XID_ERRORS",
    ]
    assert text.splitlines()[:3] == [
        "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).",
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-aaaaaaaa-0000-0000-0000-000000000000",'
        'pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
        'Hostname="node-001",DCGM_FI_DRIVER_VERSION="580.95.05"} 31',
    ]
    assert text.endswith("\n") and "\n\n" not in text


def test_series_keep_their_input_order() -> None:
    samples = [
        gpu_sample(gpu="10"),
        gpu_sample(gpu="2"),
        gpu_sample(attributes=(("hpc_job", "4713"),)),
        gpu_sample(attributes=(("hpc_job", "4712"),)),
    ]
    lines = sample_lines(render(samples))
    assert [parse_line(line).labels[0][1] for line in lines] == ["10", "2", "0", "0"]
    assert [dict(parse_line(line).labels).get("hpc_job") for line in lines] == [None, None, "4713", "4712"]


def test_values_go_out_as_the_collector_wrote_them() -> None:
    text = render([gpu_sample(POWER, "72.500000"), gpu_sample(ENERGY, "123456789012")])
    assert text.splitlines()[2].endswith("} 72.500000")
    assert text.splitlines()[5].endswith("} 123456789012")


def test_empty_hostname_drops_the_label() -> None:
    line = sample_lines(render([gpu_sample(hostname="")]))[0]
    assert "Hostname" not in line


def test_an_empty_help_keeps_the_trailing_space() -> None:
    assert render([gpu_sample(Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", ""))]).startswith(
        "# HELP DCGM_FI_DEV_GPU_TEMP \n"
    )


def test_the_same_label_set_twice_is_rendered_twice() -> None:
    """A job id listed twice in a mapping file: the tag writes both lines (HTTP 200)."""
    job = (("hpc_job", "4711"),)
    text = render([gpu_sample(attributes=job), gpu_sample(attributes=job)])
    assert len(sample_lines(text)) == 2 and sample_lines(text)[0] == sample_lines(text)[1]


def test_nothing_is_escaped() -> None:
    """text/template escapes nothing: a quote, backslash or newline goes out raw (a defect)."""
    counter = Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", 'back\\slash "quoted"')
    text = render([gpu_sample(counter, attributes=(("hpc_job", 'a"b\\c\nd'),))])
    assert '# HELP DCGM_FI_DEV_GPU_TEMP back\\slash "quoted"\n' in text
    assert 'hpc_job="a"b\\c\nd"} 31\n' in text


def test_an_attribute_named_like_a_fixed_label_is_written_twice() -> None:
    line = sample_lines(render([gpu_sample(attributes=(("gpu", "7"),))]))[0]
    assert line.startswith('DCGM_FI_DEV_GPU_TEMP{gpu="0",') and ',gpu="7"}' in line
