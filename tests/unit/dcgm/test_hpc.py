"""hpc_job: every edge case of upstream's HPC job mapping, on real files in tmp_path."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from lab.dcgm.hpc import HpcJobMapper, JobMappingError, apply_hpc_jobs, read_job_file
from lab.dcgm.node import EmulatedNode
from lab.dcgm.samples import Sample

from .dcgm_testing import parse_line, power_sample, sample_lines, unlink_then_read

sample = power_sample


def jobs_of(samples: list[Sample], gpu: str) -> list[str | None]:
    return [dict(s.attributes).get("hpc_job") for s in samples if s.gpu == gpu]


# (name, files written into the mapping dir, GPU -> expected hpc_job values of its series)
CASES: list[tuple[str, dict[str, bytes], dict[str, list[str | None]]]] = [
    ("when all GPUs have job files", {"0": b"101\n", "1": b"102\n"}, {"0": ["101"], "1": ["102"]}),
    (
        "a GPU shared by two jobs gets one series per job and loses the unlabelled one",
        {"0": b"101\n102\n"},
        {"0": ["101", "102"], "1": [None]},
    ),
    ("an empty file leaves the GPU unlabelled", {"0": b""}, {"0": [None]}),
    ("a GPU without a file is unlabelled", {"1": b"7\n"}, {"0": [None], "1": ["7"]}),
    ("the last line needs no newline", {"0": b"101\n102"}, {"0": ["101", "102"]}),
    ("lines are not trimmed", {"0": b" 101 \n"}, {"0": [" 101 "]}),
    ("a CRLF line loses only its carriage return", {"0": b"101\r\n"}, {"0": ["101"]}),
    ("a blank line becomes an empty hpc_job", {"0": b"101\n\n"}, {"0": ["101", ""]}),
    (
        "names outside ^\\d+(\\.\\d+)?$ are ignored",
        {"GPU-abc": b"1\n", "1e5": b"2\n", "+0": b"3\n", "0.1.2": b"4\n", ".0": b"5\n", "0.txt": b"6\n"},
        {"0": [None]},
    ),
    (
        "duplicate ids in one file are kept (de-duplication came after 4.8.2)",
        {"0": b"101\n101\n"},
        {"0": ["101", "101"]},
    ),
]


@pytest.mark.parametrize(("files", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_mapping_files(
    tmp_path: Path,
    node_log: logging.Logger,
    files: dict[str, bytes],
    expected: dict[str, list[str | None]],
) -> None:
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    mapper = HpcJobMapper(tmp_path, node_log)
    labelled = apply_hpc_jobs([sample("0"), sample("1")], mapper.read())
    for gpu, jobs in expected.items():
        assert jobs_of(labelled, gpu) == jobs


def test_a_directory_named_like_a_gpu_is_skipped(tmp_path: Path, node_log: logging.Logger) -> None:
    (tmp_path / "0").mkdir()
    assert HpcJobMapper(tmp_path, node_log).read() == {}


def test_mig_files_label_only_their_instance_and_plain_files_never_label_mig(
    tmp_path: Path, node_log: logging.Logger
) -> None:
    (tmp_path / "2").write_text("plain\n")
    (tmp_path / "2.9").write_text("mig\n")
    jobs = HpcJobMapper(tmp_path, node_log).read()
    labelled = apply_hpc_jobs([sample("2", "1g.10gb", "9"), sample("2", "1g.10gb", "3"), sample("2")], jobs)
    assert [dict(s.attributes).get("hpc_job") for s in labelled] == ["mig", None, "plain"]


def test_the_transform_does_not_touch_its_input() -> None:
    original = [sample("0")]
    labelled = apply_hpc_jobs(original, {"0": ["1", "2"]})
    assert original == [sample("0")]
    assert len(labelled) == 2


def test_missing_directory_is_logged_once_at_start_then_silent_until_it_appears(
    tmp_path: Path, node_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    mapping = tmp_path / "job-mapping"
    with caplog.at_level(logging.INFO, logger=node_log.name):
        mapper = HpcJobMapper(mapping, node_log)
        assert mapper.read() is None
        assert mapper.read() is None
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == [f"HPC job mapping file directory '{mapping}' not found on initialization."]
    mapping.mkdir()
    (mapping / "0").write_text("5\n")
    assert mapper.read() == {"0": ["5"]}


def test_directory_vanishing_later_is_logged_on_every_scrape(
    tmp_path: Path, node_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "m").mkdir()
    mapper = HpcJobMapper(tmp_path / "m", node_log)
    assert mapper.read() == {}
    (tmp_path / "m").rmdir()
    with caplog.at_level(logging.ERROR, logger=node_log.name):
        assert mapper.read() is None
        assert mapper.read() is None
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert (
        messages
        == [
            f"Unable to access HPC job mapping file directory '{tmp_path / 'm'}' - "
            "directory not found. Ignoring."
        ]
        * 2
    )
    assert caplog.records[-1].attrs == {  # type: ignore[attr-defined]
        "error": f"stat {tmp_path / 'm'}: no such file or directory"
    }


def test_a_file_listed_then_gone_fails_the_read(tmp_path: Path, node_log: logging.Logger) -> None:
    (tmp_path / "0").write_text("5\n")
    mapper = HpcJobMapper(tmp_path, node_log, read_file=unlink_then_read)
    with pytest.raises(JobMappingError, match=f"open {tmp_path / '0'}: no such file or directory"):
        mapper.read()


def test_a_line_of_64_kib_fails_the_read_like_bufio_scanner(tmp_path: Path) -> None:
    (tmp_path / "0").write_bytes(b"1" * 65535 + b"\n")
    assert read_job_file(tmp_path / "0") == ["1" * 65535]
    (tmp_path / "0").write_bytes(b"1" * 65536 + b"\n")
    with pytest.raises(JobMappingError, match="token too long"):
        read_job_file(tmp_path / "0")


def test_duplicate_ids_give_the_same_series_twice(
    tmp_path: Path, make_node: Callable[..., EmulatedNode]
) -> None:
    """hpc.go@4.5.3-4.8.2:89 appends every line; the template renders each copy (HTTP 200)."""
    (tmp_path / "0").write_text("7\n7\n")
    node = make_node(mapping_dir=tmp_path, gpus=2)
    lines = [line for line in sample_lines(node.scrape()) if 'gpu="0"' in line]
    assert len(lines) == 2 * len(set(lines)) and all('hpc_job="7"' in line for line in lines)


def test_two_jobs_on_one_gpu_double_every_family_of_that_gpu(
    tmp_path: Path, make_node: Callable[..., EmulatedNode]
) -> None:
    (tmp_path / "1").write_text("4711\n4712\n")
    node = make_node(mapping_dir=tmp_path, gpus=2)
    lines = [parse_line(line) for line in sample_lines(node.scrape())]
    gpu1 = [dict(p.labels) for p in lines if dict(p.labels)["gpu"] == "1"]
    gpu0 = [dict(p.labels) for p in lines if dict(p.labels)["gpu"] == "0"]
    assert len(gpu1) == 2 * len(gpu0) == 2 * 25
    assert {labels["hpc_job"] for labels in gpu1} == {"4711", "4712"}
    assert all("hpc_job" not in labels for labels in gpu0)


def test_debug_lines_are_hpc_gos(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], caplog: pytest.LogCaptureFixture
) -> None:
    """hpc.go@4.5.3-4.8.2:78,92,173,185,190 (slog.Debug; the shim's loggers show them with --debug)."""
    (tmp_path / "1").write_text("4711\n4712\n")
    (tmp_path / "0").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "x.tmp").write_text("9\n")
    caplog.set_level(logging.DEBUG)
    make_node(mapping_dir=tmp_path, gpus=2).scrape()
    messages = [record.getMessage() for record in caplog.records if record.levelno == logging.DEBUG]
    assert messages == [
        f'hpc mapper: 4 files in the "{tmp_path}" found',
        'HPC mapper: the "sub" file is directory',
        'HPC mapper: file "x.tmp" name doesn\'t match with <GPU_ID> or <GPU_ID>.<GPU_INSTANCE_ID> convention',
        'HPC job mapping files: []string{"0", "1"}',
        "GPU to job mapping: map[0:[] 1:[4711 4712]]",
    ]
