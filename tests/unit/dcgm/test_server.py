"""Live HTTP on 127.0.0.1 port 0: /metrics, /health, the HTTP 500 cases, several nodes per process."""

from __future__ import annotations

import http.client
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lab.dcgm.cli import build_nodes
from lab.dcgm.hpc import HpcJobMapper
from lab.dcgm.node import EmulatedNode
from lab.dcgm.server import RunningShim, parse_listen_address, serve

from .dcgm_testing import parse_line, sample_lines, unlink_then_read


@contextmanager
def running(nodes: list[EmulatedNode]) -> Iterator[RunningShim]:
    shim = serve(nodes)  # binds before returning: requests can follow at once
    try:
        yield shim
    finally:
        shim.shutdown()


def get(address: str, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    host, port = parse_listen_address(address)
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_metrics_and_health_answer_like_the_exporter(make_node: Callable[..., EmulatedNode]) -> None:
    with running([make_node(address="127.0.0.1:0", gpus=2)]) as shim:
        address = shim.addresses["gpu-node-001"]
        status, headers, body = get(address, "/metrics")
        assert status == 200
        # net/http sniffs the type (the handler sets none): no version= parameter at this tag.
        assert headers["Content-Type"] == "text/plain; charset=utf-8"
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert "Server" not in headers and "Date" in headers
        # Over net/http's 2048-byte buffer the body goes out chunked, without Content-Length.
        assert headers["Transfer-Encoding"] == "chunked" and "Content-Length" not in headers
        assert body.decode().startswith("# HELP DCGM_FI_DEV_SM_CLOCK ")  # field id 100 comes first
        assert len(sample_lines(body.decode())) == 2 * 25
        assert get(address, "/health")[::2] == (200, b"OK")
        assert get(address, "/health")[1]["X-Registry-Available"] == "true"
        assert get(address, "/health")[1]["Content-Length"] == "2"
        assert get(address, "/nope")[::2] == (404, b"404 page not found\n")
        head_status, _, head_body = get(address, "/metrics", "HEAD")
        assert (head_status, head_body) == (200, b"")
        # gorilla/mux routes without .Methods(): any method gets the same answer.
        assert get(address, "/health", "POST")[::2] == (200, b"OK")


def test_duplicate_job_ids_answer_http_200_with_the_series_twice(
    tmp_path: Path, make_node: Callable[..., EmulatedNode]
) -> None:
    """At 4.5.3-4.8.2; the 500 belongs to the later expfmt renderer (signals/dcgm.md)."""
    (tmp_path / "0").write_text("7\n7\n")
    with running([make_node(address="127.0.0.1:0", gpus=1, mapping_dir=tmp_path)]) as shim:
        status, _, body = get(shim.addresses["gpu-node-001"], "/metrics")
    assert status == 200
    assert len(sample_lines(body.decode())) == 2 * 25


def test_a_mapping_file_unlinked_after_listing_answers_http_500(
    tmp_path: Path, make_node: Callable[..., EmulatedNode], caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "0").write_text("7\n")
    node = make_node(address="127.0.0.1:0", gpus=1, mapping_dir=tmp_path)
    node.hpc = HpcJobMapper(tmp_path, node.log, read_file=unlink_then_read)
    with running([node]) as shim:
        status, _, body = get(shim.addresses["gpu-node-001"], "/metrics")
        assert (status, body) == (500, b"internal server error\n")
        # The next scrape lists the directory again and no longer finds the file.
        assert get(shim.addresses["gpu-node-001"], "/metrics")[0] == 200
    (record,) = [r for r in caplog.records if r.getMessage() == "Failed to apply transformations on metrics"]
    # server.go@4.5.3-4.8.2:311-318, attributes in its order; metrics_count counts the families.
    assert list(record.attrs) == [  # type: ignore[attr-defined]
        "error",
        "fieldEntityGroup",
        "transformation",
        "metrics_count",
        "metrics_debug_file",
        "deviceinfo_debug_file",
    ]
    assert record.attrs["transformation"] == "hpcMapper" and record.attrs["metrics_count"] == 25  # type: ignore[attr-defined]


def test_each_node_serves_its_own_hostname_and_its_own_mapping_dir(tmp_path: Path) -> None:
    for node, job in (("gpu-a", "100"), ("gpu-b", "200")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "0").write_text(f"{job}\n")
    nodes = build_nodes(
        [
            "--node",
            "gpu-a:127.0.0.1:0",
            "--node",
            "gpu-b:127.0.0.1:0",
            "--gpus",
            "2",
            "--hpc-job-mapping-dir",
            f"{tmp_path}/%n",
        ],
        env={},
    )
    with running(nodes) as shim:
        assert set(shim.addresses) == {"gpu-a", "gpu-b"}
        assert shim.addresses["gpu-a"] != shim.addresses["gpu-b"]
        for node, job in (("gpu-a", "100"), ("gpu-b", "200")):
            status, _, body = get(shim.addresses[node], "/metrics")
            assert status == 200
            labels = [dict(parse_line(line).labels) for line in sample_lines(body.decode())]
            assert {entry["Hostname"] for entry in labels} == {node}
            assert {entry.get("hpc_job") for entry in labels if entry["gpu"] == "0"} == {job}
            assert {entry.get("hpc_job") for entry in labels if entry["gpu"] == "1"} == {None}
        uuids_a = {
            dict(parse_line(line).labels)["UUID"]
            for line in sample_lines(get(shim.addresses["gpu-a"], "/metrics")[2].decode())
        }
        uuids_b = {
            dict(parse_line(line).labels)["UUID"]
            for line in sample_lines(get(shim.addresses["gpu-b"], "/metrics")[2].decode())
        }
        assert uuids_a.isdisjoint(uuids_b)


def test_counters_move_forward_across_http_scrapes(
    make_node: Callable[..., EmulatedNode], clock: Callable[[], float]
) -> None:
    node = make_node(address="127.0.0.1:0", gpus=1)
    with running([node]) as shim:
        energies = []
        for _ in range(3):
            clock.advance(15)  # type: ignore[attr-defined]
            body = get(shim.addresses["gpu-node-001"], "/metrics")[2].decode()
            energies += [
                float(parse_line(line).value)
                for line in sample_lines(body)
                if line.startswith("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
            ]
    assert energies[0] < energies[1] < energies[2]
