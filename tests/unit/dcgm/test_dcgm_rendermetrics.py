"""Exposition: real exporter lines reproduced byte for byte; label order, HELP/TYPE, values."""

from __future__ import annotations

import pytest

from lab.dcgm.counters import Counter
from lab.dcgm.rendermetrics import RenderError, label_signature, render
from lab.dcgm.samples import Sample
from lab.exposition import go_float

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
def test_captured_exporter_lines_are_rendered_byte_for_byte(fixture: str) -> None:
    text = (FIXTURES / fixture).read_text()
    families = families_of(text)
    samples = [sample_from_line(line, families[parse_line(line).name]) for line in sample_lines(text)]

    rendered = render(list(families.values()), samples)

    assert sorted(sample_lines(rendered)) == sorted(sample_lines(text))
    header_lines = {line for line in text.splitlines() if line.startswith("#")}
    assert header_lines == {line for line in rendered.splitlines() if line.startswith("#")}


def test_every_fixture_file_is_covered_by_a_test() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.prom")) == [
        "h100-20c-kubernetes-vks.prom",
        "h100-kubernetes-issue-490.prom",
    ]
    assert (FIXTURES / "PROVENANCE.md").is_file()


def test_rendered_text_round_trips_through_the_parser() -> None:
    text = (FIXTURES / "h100-20c-kubernetes-vks.prom").read_text()
    families = families_of(text)
    samples = [sample_from_line(line, families[parse_line(line).name]) for line in sample_lines(text)]
    once = render(list(families.values()), samples)
    again = render(
        list(families.values()),
        [sample_from_line(line, families[parse_line(line).name]) for line in sample_lines(once)],
    )
    assert again == once


GAUGE = Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).")
ENERGY = Counter(
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."
)


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
    line = sample_lines(render([GAUGE], [sample]))[0]
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


def test_help_and_type_lines_precede_each_family_and_families_are_sorted() -> None:
    text = render([GAUGE, ENERGY], [gpu_sample(), gpu_sample(ENERGY, "5")])
    assert text.splitlines()[:3] == [
        "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).",
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge",
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-aaaaaaaa-0000-0000-0000-000000000000",'
        'pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
        'Hostname="node-001",DCGM_FI_DRIVER_VERSION="580.95.05"} 31',
    ]
    assert text.splitlines()[3] == (
        "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ)."
    )


def test_families_without_samples_are_not_rendered() -> None:
    assert "ENERGY" not in render([GAUGE, ENERGY], [gpu_sample()])


def test_empty_hostname_drops_the_label_like_no_hostname() -> None:
    line = sample_lines(render([GAUGE], [gpu_sample(hostname="")]))[0]
    assert "Hostname" not in line


def test_samples_are_ordered_by_label_signature_not_by_gpu_index() -> None:
    samples = [
        gpu_sample(gpu="0", gpu_uuid="GPU-ffffffff-0000-0000-0000-000000000000"),
        gpu_sample(gpu="1", gpu_uuid="GPU-11111111-0000-0000-0000-000000000000"),
    ]
    lines = sample_lines(render([GAUGE], samples))
    assert [parse_line(line).labels[0] for line in lines] == [("gpu", "1"), ("gpu", "0")]


def test_label_signature_is_length_prefixed_and_sorted() -> None:
    assert label_signature([("gpu", "0"), ("UUID", "x")]) == "4:UUID=1:x;3:gpu=1:0;"


def test_label_values_and_help_are_escaped_like_expfmt() -> None:
    counter = Counter("DCGM_FI_DEV_GPU_TEMP", "gauge", 'back\\slash\nnewline "quoted"')
    text = render([counter], [gpu_sample(counter, attributes=(("hpc_job", 'a"b\\c\nd'),))])
    assert '# HELP DCGM_FI_DEV_GPU_TEMP back\\\\slash\\nnewline "quoted"' in text
    assert 'hpc_job="a\\"b\\\\c\\nd"' in text


def test_two_samples_with_the_same_label_set_fail_the_render() -> None:
    with pytest.raises(RenderError, match="duplicate sample labels"):
        render([GAUGE], [gpu_sample(), gpu_sample(value="32")])


def test_an_attribute_colliding_with_a_fixed_label_fails_the_render() -> None:
    with pytest.raises(RenderError, match="duplicate label name 'gpu'"):
        render([GAUGE], [gpu_sample(attributes=(("gpu", "7"),))])


def test_invalid_utf8_label_value_fails_the_render() -> None:
    with pytest.raises(RenderError, match="invalid UTF-8"):
        render([GAUGE], [gpu_sample(attributes=(("hpc_job", b"\xff".decode("utf-8", "surrogateescape")),))])


@pytest.mark.parametrize(
    ("raw", "message"),
    [("abc", "non-numeric"), ("NaN", "non-finite"), ("-1", "negative counter")],
)
def test_invalid_values_fail_the_render(raw: str, message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render([ENERGY], [gpu_sample(ENERGY, raw)])


# Produced by Go 1.26.8: strconv.FormatFloat(strconv.ParseFloat(raw), 'g', -1, 64).
GO_FORMATTED = [
    ("0", "0"),
    ("1", "1"),
    ("-1", "-1"),
    ("2", "2"),
    ("75.123000", "75.123"),
    ("0.068680", "0.06868"),
    ("0.000000", "0"),
    ("123456", "123456"),
    ("1234567", "1.234567e+06"),
    ("1000000", "1e+06"),
    ("100000", "100000"),
    ("81559", "81559"),
    ("1980", "1980"),
    ("0.0001", "0.0001"),
    ("0.00001", "1e-05"),
    ("123456789012", "1.23456789012e+11"),
    ("1.5", "1.5"),
    ("699.999000", "699.999"),
    ("0.5", "0.5"),
    ("2619", "2619"),
    ("15000000000", "1.5e+10"),
    ("0.333333", "0.333333"),
]


@pytest.mark.parametrize(("raw", "expected"), GO_FORMATTED)
def test_values_are_formatted_like_go_strconv_g(raw: str, expected: str) -> None:
    assert go_float(float(raw)) == expected
