"""The lab's stand-in for a boot-time ``nvidia-smi --query-gpu=index,uuid --format=csv,noheader``: one
``<index>, <UUID>`` line per GPU of an emulated node, the UUIDs its series carry (lab.dcgm.device).

A site writes this file at boot (before slurmd starts) so that the Prolog can name its GPUs' UUIDs
without calling nvidia-smi on the job's critical path (docs/job-mapping.md); in the lab the shim
writes it when it starts, from the same device model, so the Prolog's line and the DCGM series agree.
This is where the emulated part begins: the file's format is nvidia-smi's, its content the shim's.
"""

from __future__ import annotations

import os
from pathlib import Path

from lab.dcgm.device import gpu_uuid


def text(node: str, gpus: int) -> str:
    """``nvidia-smi --query-gpu=index,uuid --format=csv,noheader``'s lines: ``0, GPU-…``."""
    return "".join(f"{index}, {gpu_uuid(node, index)}\n" for index in range(gpus))


def write(template: str, node: str, gpus: int) -> Path:
    """Write ``node``'s file at ``template`` (``%n`` = the node's name), replacing it whole."""
    path = Path(template.replace("%n", node))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text(node, gpus), encoding="utf-8")
    temporary.chmod(0o644)
    os.replace(temporary, path)
    return path
