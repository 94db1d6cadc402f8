"""A gang's replicas on two nodes of one process: a power brake on one replica's GPU slows the other
replica's GPUs through the shared pace board, and only the GPUs of that workload."""

from __future__ import annotations

import statistics
from pathlib import Path

from lab.dcgm.counters import load_counters
from lab.dcgm.gpu_model import EMULATED_FIELDS
from lab.dcgm.kubernetes import PodInfo, pod_resources_document
from lab.dcgm.node import EmulatedNode, NodeConfig
from lab.dcgm.pace import PaceBoard
from lab.dcgm.throttle import write_throttle

from .dcgm_testing import FakeClock

TENSOR = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
SCRAPE_S = 15.0


def test_the_board_keeps_each_nodes_last_post_and_answers_the_lowest_share() -> None:
    board = PaceBoard()
    assert board.share(["workload:ns/a"]) == 1.0
    board.post("dgx-001", {"workload:ns/a": 0.5, "ns/a-master-0": 0.5})
    board.post("dgx-002", {"workload:ns/a": 0.75})
    assert board.share(["ns/a-worker-0", "workload:ns/a"]) == 0.5
    board.post("dgx-001", {})  # the brake cleared on dgx-001
    assert board.share(["workload:ns/a"]) == 0.75 and board.share(["ns/b"]) == 1.0


def _nodes(tmp_path: Path, clock: FakeClock, board: PaceBoard | None) -> dict[str, EmulatedNode]:
    """dgx-001 holds the gang's master (GPUs 0-1); dgx-002 its worker (GPUs 0-1) and another
    workload's pod (GPUs 2-3)."""

    def pod(name: str, workload: str) -> PodInfo:
        return PodInfo(name, "runai-team-a", "pytorch", "training", workload)

    mapping = {
        "dgx-001": {0: pod("gang-master-0", "gang"), 1: pod("gang-master-0", "gang")},
        "dgx-002": {
            0: pod("gang-worker-0", "gang"),
            1: pod("gang-worker-0", "gang"),
            2: pod("solo-x", "solo"),
            3: pod("solo-x", "solo"),
        },
    }
    resources = tmp_path / "pod-resources.json"
    resources.write_text(pod_resources_document(mapping))
    counters = load_counters(supported_fields=EMULATED_FIELDS)
    return {
        name: EmulatedNode(
            NodeConfig(
                name=name,
                gpus=4,
                kubernetes=True,
                pod_resources=resources,
                throttle_dir=tmp_path / "throttle",
            ),
            counters,
            clock=clock,
            pace=board,
        )
        for name in mapping
    }


def _tensor_medians(nodes: dict[str, EmulatedNode], clock: FakeClock, scrapes: int = 120) -> dict[str, float]:
    seen: dict[str, list[float]] = {}
    for _ in range(scrapes):
        clock.advance(SCRAPE_S)
        for name, node in nodes.items():  # the braked node first, as any scrape order may be
            samples, _, _ = node.samples()
            for sample in samples:
                if sample.counter.field_name == TENSOR:
                    seen.setdefault(f"{name}/{sample.gpu}", []).append(float(sample.value))
    return {key: statistics.median(values) for key, values in seen.items()}


def test_a_brake_on_one_replica_slows_the_other_replicas_gpus_on_another_node(tmp_path: Path) -> None:
    clock, board = FakeClock(), PaceBoard()
    nodes = _nodes(tmp_path, clock, board)
    healthy = _tensor_medians(nodes, clock)
    write_throttle(tmp_path / "throttle", "dgx-001", 0, "power-brake")
    braked = _tensor_medians(nodes, clock)
    # The master's other GPU and the worker's GPUs on dgx-002 wait at every all-reduce: about half.
    for gpu in ("dgx-001/1", "dgx-002/0", "dgx-002/1"):
        assert braked[gpu] < 0.7 * healthy[gpu], (gpu, healthy[gpu], braked[gpu])
    # The other workload on dgx-002 does not notice.
    for gpu in ("dgx-002/2", "dgx-002/3"):
        assert braked[gpu] > 0.8 * healthy[gpu], (gpu, healthy[gpu], braked[gpu])
    write_throttle(tmp_path / "throttle", "dgx-001", 0, None)
    cleared = _tensor_medians(nodes, clock)
    assert cleared["dgx-002/0"] > 0.8 * healthy["dgx-002/0"]


def test_without_a_board_a_node_paces_only_its_own_gpus(tmp_path: Path) -> None:
    clock = FakeClock()
    nodes = _nodes(tmp_path, clock, None)  # each node its own process, as the Slurm lab's are
    healthy = _tensor_medians(nodes, clock)
    write_throttle(tmp_path / "throttle", "dgx-001", 0, "power-brake")
    braked = _tensor_medians(nodes, clock)
    assert braked["dgx-001/1"] < 0.7 * healthy["dgx-001/1"]
    assert braked["dgx-002/0"] > 0.8 * healthy["dgx-002/0"]
