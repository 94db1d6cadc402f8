"""The shim renders byte for byte what dcgm-exporter 4.5.3-4.8.2's own code renders for the same samples.

Each case takes one scrape's samples from an emulated node, renders them with the shim (its pod and HPC
mappers, then its renderer) and with the tag's code built from the vendor archive (tag_renderer.py: the
tag's HPC mapper over the same mapping directory, then its text/template renderer), and compares the
bytes. The tag's pod mapper needs a kubelet's gRPC socket, so in Kubernetes mode the tag receives the
samples with the shim's pod attributes already set and checks how they render.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.dcgm.counters import THROTTLE_COUNTERS_PATH, load_counters
from lab.dcgm.gpu_model import EMULATED_FIELDS
from lab.dcgm.hpc import JobMappingError, apply_hpc_jobs
from lab.dcgm.kubernetes import apply_pods
from lab.dcgm.node import EmulatedNode, NodeConfig, ScrapeError
from lab.dcgm.rendermetrics import render
from lab.dcgm.samples import Sample, collector_value
from lab.dcgm.throttle import CAUSES, write_throttle
from lab.dcgm.xid import write_injected_xid

from . import tag_renderer

NODE = "dgx-001"


@pytest.fixture(scope="module")
def tag_binary() -> Path:
    return tag_renderer.build()


def node(collectors: Path | None = None, **config: Any) -> EmulatedNode:
    counters = load_counters(collectors, supported_fields=EMULATED_FIELDS)
    return EmulatedNode(NodeConfig(name=NODE, **config), counters, clock=lambda: 1_000.0)


def as_tag_input(samples: list[Sample]) -> list[dict[str, Any]]:
    return [
        {
            "field_name": s.counter.field_name,
            "prom_type": s.counter.prom_type,
            "help": s.counter.help,
            "value": s.value,
            "gpu": s.gpu,
            "uuid": s.gpu_uuid,
            "pci_bus_id": s.pci_bus_id,
            "device": s.device,
            "model_name": s.model_name,
            "hostname": s.hostname,
            "mig_profile": s.mig_profile,
            "gpu_instance_id": s.gpu_instance_id,
            "labels": dict(s.labels),
            "attributes": dict(s.attributes),
        }
        for s in samples
    ]


def both(binary: Path, emulated: EmulatedNode, samples: list[Sample] | None = None) -> tuple[bytes, bytes]:
    """(shim bytes, tag bytes) of one scrape; ``samples`` replaces the node's own (MIG cases)."""
    own, jobs, pods = emulated.samples()
    untransformed = samples if samples is not None else own
    pod_labelled = apply_pods(untransformed, pods) if emulated.config.kubernetes else untransformed
    shim = render(apply_hpc_jobs(pod_labelled, jobs) if emulated.hpc else pod_labelled)
    tag = tag_renderer.render(binary, as_tag_input(pod_labelled), emulated.config.mapping_dir)
    assert tag.status == 200, tag.error
    return shim.encode("utf-8", errors="surrogateescape"), tag.body


def write_mapping(directory: Path, files: dict[str, bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (directory / name).write_bytes(content)
    return directory


def test_plain_slurm_mode_one_job_per_gpu(tag_binary: Path, tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "jobs", {str(gpu): b"%d\n" % (4700 + gpu // 2) for gpu in range(8)})
    shim, tag = both(tag_binary, node(mapping_dir=mapping))
    assert shim == tag
    assert shim.count(b"\n") == 8 * 25 + 2 * 25  # 8 GPUs x 25 families, plus HELP and TYPE


def test_no_mapping_dir_and_no_files(tag_binary: Path, tmp_path: Path) -> None:
    assert len(set(both(tag_binary, node()))) == 1
    assert len(set(both(tag_binary, node(mapping_dir=write_mapping(tmp_path / "empty", {}))))) == 1


def test_several_jobs_per_gpu_and_every_line_edge_case(tag_binary: Path, tmp_path: Path) -> None:
    mapping = write_mapping(
        tmp_path / "jobs",
        {
            "0": b"4713\n4712\n",  # file order, not sorted
            "1": b"4711\n4711\n",  # a duplicate id: the same series twice
            "2": b" 42 \r\n\nlast",  # spaces kept, CRLF, a blank line, no final newline
            "3": b"",  # empty: unlabelled
            "4": b'q"u\\o\n',  # rendered raw: the tag escapes nothing
            "5": b"\xff\xfe7\n",  # not UTF-8: the bytes go out as read
            "00": b"9\n",  # matches the name pattern, labels nothing
            "1e5": b"9\n",  # does not match
            "GPU-0": b"9\n",
            "7.tmp": b"9\n",
        },
    )
    (mapping / "6").mkdir()  # a directory is skipped
    shim, tag = both(tag_binary, node(mapping_dir=mapping))
    assert shim == tag
    assert b'hpc_job="q"u\\o"' in shim and b'hpc_job=""' in shim


def test_mig_instances_are_keyed_gpu_dot_instance(tag_binary: Path, tmp_path: Path) -> None:
    mapping = write_mapping(tmp_path / "jobs", {"2.1": b"5001\n", "2": b"5002\n", "3.0": b"5003\n5004\n"})
    emulated = node(mapping_dir=mapping)
    samples, _, _ = emulated.samples()
    mig = {"2": ("1g.10gb", "1"), "3": ("3g.40gb", "0")}
    as_mig = [
        Sample(*(getattr(s, f) for f in Sample.__slots__[:-2]), *mig[s.gpu]) if s.gpu in mig else s
        for s in samples
    ]
    shim, tag = both(tag_binary, emulated, as_mig)
    assert shim == tag
    assert b'GPU_I_PROFILE="1g.10gb",GPU_I_ID="1",Hostname="dgx-001"' in shim
    assert b'hpc_job="5002"' not in shim  # a plain "2" file does not label MIG series


def test_xid_attributes_on_every_gpu(tag_binary: Path, tmp_path: Path) -> None:
    faults = tmp_path / "xid"
    write_injected_xid(faults, NODE, 3, 79)
    write_injected_xid(faults, NODE, 5, 300)  # outside the tag's table: "Unknown Error"
    shim, tag = both(
        tag_binary, node(fault_dir=faults, mapping_dir=write_mapping(tmp_path / "j", {"3": b"7\n"}))
    )
    assert shim == tag
    assert b'err_code="79",err_msg="GPU has fallen off the bus",hpc_job="7"} 79' in shim


def test_throttled_gpus_with_the_opt_in_throttle_profile(tag_binary: Path, tmp_path: Path) -> None:
    throttles = tmp_path / "throttle"
    for gpu, cause in enumerate(sorted(CAUSES)):
        write_throttle(throttles, NODE, gpu, cause)
    mapping = write_mapping(tmp_path / "j", {str(gpu): b"%d\n" % (60 + gpu // 2) for gpu in range(6)})
    for collectors in (None, THROTTLE_COUNTERS_PATH):
        emulated = node(collectors, throttle_dir=throttles, mapping_dir=mapping)
        shim, tag = both(tag_binary, emulated)
        assert shim == tag
        families = 27 if collectors else 25
        assert shim.count(b"\n") == 8 * families + 2 * families
    assert b"# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n" in shim
    assert (
        b"# HELP DCGM_FI_DEV_THERMAL_VIOLATION Throttling duration due to thermal constraints (in ns).\n"
        in shim
    )


def test_kubernetes_mode_with_pods_and_jobs(tag_binary: Path, tmp_path: Path) -> None:
    pods = tmp_path / "pods.json"
    pods.write_text(
        '{"nodes": {"dgx-001": {"0": {"pod": "train-0", "namespace": "team-a", "container": "main"},'
        ' "5": {"pod": "nb", "namespace": "ds", "container": "jupyter"}}}}'
    )
    mapping = write_mapping(tmp_path / "jobs", {"5": b"88\n"})
    shim, tag = both(tag_binary, node(kubernetes=True, pod_resources=pods, mapping_dir=mapping))
    assert shim == tag
    assert b'container="main",err_code="0",err_msg="No Error",namespace="team-a",pod="train-0"} 0' in shim


def test_values_are_the_collectors_strings(tag_binary: Path) -> None:
    rng = random.Random(11)
    values: list[int | float] = [
        0,
        -1,
        2**63 - 1,
        123456789012,
        0.0,
        72.5,
        0.0000005,
        0.0000015,
        2.5e-7,
        1e20,
        1e300,
        -3.75,
        699.999,
    ]
    values += [rng.randint(0, 10**12) for _ in range(50)] + [rng.uniform(0, 1000) for _ in range(200)]
    assert [collector_value(v) for v in values] == tag_renderer.format_values(tag_binary, values)


def unreadable_cases(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    dangling = write_mapping(tmp_path / "dangling", {"0": b"1\n"})
    os.symlink(tmp_path / "nowhere", dangling / "1")  # listed, then open fails: HTTP 500
    yield "dangling symlink", dangling
    yield "line of 64 KiB", write_mapping(tmp_path / "long", {"0": b"7" * 65536 + b"\n"})


def test_hpc_mapper_errors_are_the_tags_500s(tag_binary: Path, tmp_path: Path) -> None:
    for case, mapping in unreadable_cases(tmp_path):
        emulated = node(mapping_dir=mapping)
        with pytest.raises(ScrapeError) as raised:
            emulated.scrape()
        assert isinstance(raised.value.__cause__, JobMappingError), case
        samples, _, _ = node().samples()
        tag = tag_renderer.render(tag_binary, as_tag_input(samples), mapping)
        assert tag.status == 500, case
        assert tag.error == f"hpcMapper: {raised.value.__cause__}", case
