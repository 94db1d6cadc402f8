"""The Run:ai construct's DCGM bridge: a throttle written under its output directory (as `lab fault
throttle` writes it from the host) slows that GPU, and the pod's other GPU waits for it."""

from __future__ import annotations

from pathlib import Path

from lab.contract import THROTTLE_DIR
from lab.dcgm.shim import PodInfo, write_throttle
from lab.runai.dcgm_bridge import DcgmBridge

NODE = "gpu-node-001"


def test_a_throttle_under_the_output_directory_reaches_the_pods_gpus(tmp_path: Path) -> None:
    clock = {"now": 0.0}
    bridge = DcgmBridge([(NODE, 2, "NVIDIA H100 80GB HBM3")], tmp_path, seed=0, clock=lambda: clock["now"])
    pod = PodInfo("train-0", "team-a", "main", "training")
    bridge.write({NODE: {0: pod, 1: pod}})

    def read() -> tuple[float, float]:
        """Max SM clock of GPU 0 and mean tensor activity of GPU 1 over 40 scrapes."""
        clocks: list[float] = []
        tensor: list[float] = []
        for _ in range(40):
            clock["now"] += 15.0
            samples, _, _ = bridge.nodes[NODE].samples()
            for s in samples:
                if s.gpu == "0" and s.counter.field_name == "DCGM_FI_DEV_SM_CLOCK":
                    clocks.append(float(s.value))
                if s.gpu == "1" and s.counter.field_name == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
                    tensor.append(float(s.value))
        return max(clocks), sum(tensor) / len(tensor)

    healthy_clock, healthy_tensor = read()
    write_throttle(tmp_path / THROTTLE_DIR, NODE, 0, "power-brake")
    braked_clock, waiting_tensor = read()
    assert (healthy_clock, braked_clock) == (1980, 990)
    assert waiting_tensor < 0.7 * healthy_tensor
