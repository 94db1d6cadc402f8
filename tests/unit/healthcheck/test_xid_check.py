"""healthcheck/dcgm-xid-check run as slurmd runs it, against a local /metrics body and stand-ins for
sinfo and scontrol that print a node state and record every update."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.paths import PROJECT_ROOT

SCRIPT = PROJECT_ROOT / "healthcheck" / "dcgm-xid-check"
XID_79 = (
    'DCGM_FI_DEV_XID_ERRORS{gpu="5",UUID="GPU-5",Hostname="dgx-003",err_code="79",'
    'err_msg="GPU has fallen off the bus"} 79\n'
)
CLEAR = 'DCGM_FI_DEV_XID_ERRORS{gpu="5",UUID="GPU-5",Hostname="dgx-003",err_code="0",err_msg=""} 0\n'
OUR_DRAIN = "drained|XID 79 GPU has fallen off the bus on GPU 5 [dcgm-xid-check]"


class Node:
    """The metrics body served, the state sinfo prints, and the scontrol updates recorded."""

    def __init__(self, root: Path, url: str, body: list[str]) -> None:
        self.root, self.url, self._body = root, url, body

    def serve(self, body: str) -> None:
        self._body[0] = body

    def state(self, line: str) -> None:
        (self.root / "sinfo.out").write_text(line + "\n")

    def run(self) -> str:
        env = {
            "PATH": f"{self.root}:{os.environ['PATH']}",
            "SLURMD_NODENAME": "dgx-003",
            "DCGM_EXPORTER_URL": self.url,
            "DCGM_XID_CHECK_LOG": str(self.root / "check.log"),
            "DCGM_XID_CHECK_CONF": str(self.root / "absent.conf"),
        }
        done = subprocess.run([sys.executable, SCRIPT], env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0 and done.stderr == "", done
        return (self.root / "check.log").read_text().splitlines()[-1]

    @property
    def updates(self) -> list[str]:
        log = self.root / "scontrol.log"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    (tmp_path / "sinfo").write_text(f'#!/bin/sh\ncat "{tmp_path}/sinfo.out"\n')
    (tmp_path / "scontrol").write_text(f'#!/bin/sh\necho "$*" >>"{tmp_path}/scontrol.log"\n')
    for tool in ("sinfo", "scontrol"):
        (tmp_path / tool).chmod(0o755)
    body = [CLEAR]

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            payload = body[0].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state = Node(tmp_path, f"http://127.0.0.1:{server.server_port}/metrics", body)
    state.state("idle|none")
    yield state
    server.shutdown()
    server.server_close()


def test_an_xid_drains_the_node_with_the_marked_reason(node: Node) -> None:
    node.serve(XID_79)
    assert "result=xid79:gpu5:drained" in node.run()
    reason = "XID 79 GPU has fallen off the bus on GPU 5 [dcgm-xid-check]"
    assert node.updates == [f"update NodeName=dgx-003 State=DRAIN Reason={reason}"]


def test_a_node_already_drained_for_an_xid_is_drained_once(node: Node) -> None:
    node.serve(XID_79)
    node.state(OUR_DRAIN)
    assert "result=xid79:gpu5:already-drained" in node.run()
    assert node.updates == []


def test_a_cleared_fault_resumes_the_node_this_check_drained(node: Node) -> None:
    node.state(OUR_DRAIN)
    assert "result=resumed" in node.run()
    assert node.updates == ["update NodeName=dgx-003 State=RESUME"]


@pytest.mark.parametrize("line", ["drained|maintenance: swap PSU", "idle|none", "mixed|none"])
def test_nodes_drained_by_others_or_healthy_are_left_alone(node: Node, line: str) -> None:
    node.state(line)
    assert "result=ok" in node.run()
    assert node.updates == []
