"""GPU fault injection: `lab fault xid NODE GPU CODE`, `lab fault throttle NODE GPU CAUSE` and
`lab fault pcie NODE GPU PER_MINUTE` write the shim's fault file for one GPU.

The file ``<lab state>/shared/xid/<node>/<gpu>`` is mounted read-only into every node container at
/var/lib/aifactory-lab/shared/xid. The DCGM shim reports the code as DCGM_FI_DEV_XID_ERRORS on that
GPU, the node's health check drains the node, and lab-gpu-app on that GPU dies like a CUDA program.
The throttle file ``<lab state>/shared/throttle/<node>/<gpu>`` (same mount, .../shared/throttle; in
a Run:ai lab ``<lab state>/runai/throttle/``, which the Run:ai container writes and reads) holds a
clock-event cause; the shim slows that GPU and the other GPUs of its job wait for it. The PCIe
replay file ``<lab state>/shared/pcie/<node>/<gpu>`` holds the replays a minute of a failing link.
Each fault set or cleared goes into the lab's fault record (:mod:`lab.attach.fault_record`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from lab.attach import fault_record
from lab.blueprint.runai_blueprint import RunaiBlueprint
from lab.blueprint.slurm_blueprint import Blueprint
from lab.contract import PCIE_REPLAY_DIR, THROTTLE_DIR, XID_DIR, shared_dir
from lab.paths import lab_state_dir

MAX_XID = 1000  # NVIDIA's XID catalogue numbers stay well below this


class FaultError(ValueError):
    """A fault that names no real node, GPU or XID; the message says what is allowed."""


def xid_dir(lab: str) -> Path:
    return shared_dir(lab) / XID_DIR


def throttle_dir(blueprint: Blueprint | RunaiBlueprint) -> Path:
    """Where the shim of the lab reads throttles: the nodes' shared mount, or the Run:ai container's
    output directory (RUNAI_OUT_MOUNT, a writable bind of ``<lab state>/runai``)."""
    if isinstance(blueprint, RunaiBlueprint):
        return lab_state_dir(blueprint.name) / "runai" / THROTTLE_DIR
    return shared_dir(blueprint.name) / THROTTLE_DIR


def _node_gpus(blueprint: Blueprint | RunaiBlueprint) -> dict[str, int]:
    if isinstance(blueprint, RunaiBlueprint):
        return {name: pool.gpus_per_node for pool in blueprint.node_pools for name in pool.node_names()}
    return dict.fromkeys(blueprint.nodes.names, blueprint.nodes.shape.gpus)


def _check_gpu(blueprint: Blueprint | RunaiBlueprint, node: str, gpu: int) -> None:
    gpus = _node_gpus(blueprint)
    if node not in gpus:
        raise FaultError(f"lab '{blueprint.name}' has no node {node!r}; nodes: {next(iter(gpus))} …")
    if not 0 <= gpu < gpus[node]:
        raise FaultError(f"GPU {gpu} does not exist on {node}: use 0..{gpus[node] - 1}")


def inject_xid(
    blueprint: Blueprint,
    node: str,
    gpu: int,
    code: int,
    write: Callable[[Path, str, int, int], Path],
    by: str = "lab fault",
) -> Path:
    """Set ``node``'s GPU ``gpu`` to XID ``code`` (0 clears it) with ``write``, the shim's own writer
    (``lab.dcgm.shim.write_injected_xid``), once the fault names a real node, GPU and XID; ``by``
    says in the fault record who did it."""
    _check_gpu(blueprint, node, gpu)
    if not 0 <= code < MAX_XID:
        raise FaultError(
            f"XID {code} is out of range: use 1..{MAX_XID - 1} (79: GPU has fallen off the bus), 0 clears"
        )
    path = write(xid_dir(blueprint.name), node, gpu, code)
    action: fault_record.Action = "cleared" if code == 0 else "injected"
    fault_record.record(blueprint.name, "xid", f"{node}/{gpu}", action, by, detail=f"XID {code}")
    return path


CLEAR = "clear"


def inject_throttle(
    blueprint: Blueprint | RunaiBlueprint,
    node: str,
    gpu: int,
    cause: str,
    causes: Collection[str],
    write: Callable[[Path, str, int, str | None], Path],
    by: str = "lab fault",
) -> Path:
    """Throttle ``node``'s GPU ``gpu`` by ``cause`` (one of ``causes``; ``clear`` ends it) with
    ``write``, the shim's own writer (``lab.dcgm.shim.write_throttle``), once the fault names a real
    node, GPU and cause; ``by`` says in the fault record who did it."""
    _check_gpu(blueprint, node, gpu)
    if cause != CLEAR and cause not in causes:
        raise FaultError(f"throttle cause {cause!r} is not known: use one of {', '.join(causes)}, or {CLEAR}")
    path = write(throttle_dir(blueprint), node, gpu, None if cause == CLEAR else cause)
    action: fault_record.Action = "cleared" if cause == CLEAR else "injected"
    fault_record.record(blueprint.name, "throttle", f"{node}/{gpu}", action, by, detail=cause)
    return path


def inject_pcie_replays(
    blueprint: Blueprint,
    node: str,
    gpu: int,
    per_minute: int,
    limit: int,
    write: Callable[[Path, str, int, int], Path],
    by: str = "lab fault",
) -> Path:
    """Make ``node``'s GPU ``gpu`` replay ``per_minute`` PCIe packets a minute (0 ends it) with
    ``write``, the shim's own writer (``lab.dcgm.shim.write_pcie_replays``), once the fault names a
    real node and GPU and a rate in 0..``limit``; ``by`` says in the fault record who did it."""
    _check_gpu(blueprint, node, gpu)
    if not 0 <= per_minute <= limit:
        raise FaultError(
            f"{per_minute} replays per minute is out of range: use 1..{limit} (DCGM warns above 8), 0 ends it"
        )
    path = write(shared_dir(blueprint.name) / PCIE_REPLAY_DIR, node, gpu, per_minute)
    action: fault_record.Action = "cleared" if per_minute == 0 else "injected"
    fault_record.record(blueprint.name, "pcie", f"{node}/{gpu}", action, by, detail=f"{per_minute}/min")
    return path
