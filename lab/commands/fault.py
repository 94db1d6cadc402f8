"""`lab fault xid`, `lab fault remap`, `lab fault throttle` and `lab fault pcie`: a GPU fault put into a
running lab (and into its fault record), read by the DCGM shim."""

from __future__ import annotations

from typing import Annotated

import typer

from lab import kinds
from lab.attach import running
from lab.bringup import engine
from lab.commands.options import KNOWN_ERRORS, LabOption, fail

app = typer.Typer(
    help="Inject GPU faults into a running lab.", no_args_is_help=True, rich_markup_mode="markdown"
)


@app.command("xid")
def fault_xid(
    node: Annotated[str, typer.Argument(help="Slurm node name, e.g. dgx-003.")],
    gpu: Annotated[int, typer.Argument(help="GPU index on that node (0-7 on a DGX).")],
    code: Annotated[
        int, typer.Argument(help="XID code, e.g. 79 (GPU has fallen off the bus), 48 (DBE); 0 clears.")
    ],
    lab: LabOption = None,
) -> None:
    """Give a GPU an XID, as a real fault would.

    The node's DCGM series show it (DCGM_FI_DEV_XID_ERRORS with err_code/err_msg), the XID health
    check drains the node within its interval (30 s in the lab), and the job on that GPU fails with
    a CUDA error line carrying its job id. Clear with code 0: the health check's next run resumes
    the node it drained (a node drained for another reason stays drained).
    """
    from lab.attach.faults import FaultError, inject_xid
    from lab.dcgm.shim import write_injected_xid

    try:
        handle = kinds.attach(engine.require_engine(), lab)
        if handle.kind != "slurm":
            raise running.LabError(
                f"lab '{handle.name}' is a {handle.kind} lab: `lab fault xid` is for Slurm labs."
            )
        path = inject_xid(handle.blueprint, node, gpu, code, write_injected_xid)
    except (*KNOWN_ERRORS, FaultError) as error:
        fail(error)
    typer.echo(f"{node} GPU {gpu}: XID {code} ({path})")


@app.command("remap")
def fault_remap(
    node: Annotated[str, typer.Argument(help="Slurm node name, e.g. dgx-003.")],
    gpu: Annotated[int, typer.Argument(help="GPU index on that node (0-7 on a DGX).")],
    failed: Annotated[
        bool, typer.Option("--failed", help="The remap cannot be recorded (XID 64): the failure flag stays.")
    ] = False,
    lab: LabOption = None,
) -> None:
    """An uncorrectable memory error whose row the GPU remaps, as an H100 reports it.

    NVIDIA's GPU Memory Error Management (User Visible Statistics; signals/dcgm.md): the GPU records
    a row-remapping entry in its InfoROM and logs XID 63, and the entry counts in
    DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS (+1); the remap takes effect at the next GPU reset. With
    `--failed` the entry cannot be recorded: XID 64, and DCGM_FI_DEV_ROW_REMAP_FAILURE turns 1 and
    stays (NVIDIA's RMA policy is what a site then follows). The XID drains the node like any other;
    `lab fault xid NODE GPU 0` is the GPU's reset (the XID clears, the remapped rows and a failure stay,
    as in the InfoROM).
    """
    from lab.attach.faults import FaultError, inject_xid
    from lab.dcgm.shim import XID_ROW_REMAP_EVENT, XID_ROW_REMAP_FAILURE, write_injected_xid

    code = XID_ROW_REMAP_FAILURE if failed else XID_ROW_REMAP_EVENT
    try:
        handle = kinds.attach(engine.require_engine(), lab)
        if handle.kind != "slurm":
            raise running.LabError(
                f"lab '{handle.name}' is a {handle.kind} lab: `lab fault remap` is for Slurm labs."
            )
        path = inject_xid(handle.blueprint, node, gpu, code, write_injected_xid, by="lab fault remap")
    except (*KNOWN_ERRORS, FaultError) as error:
        fail(error)
    typer.echo(f"{node} GPU {gpu}: XID {code}, row remap {'failed' if failed else 'recorded'} ({path})")


@app.command("throttle")
def fault_throttle(
    node: Annotated[str, typer.Argument(help="Node name: a Slurm node (dgx-001) or a Run:ai lab's node.")],
    gpu: Annotated[int, typer.Argument(help="GPU index on that node (0-7 on a DGX).")],
    cause: Annotated[str, typer.Argument(help="power-brake, thermal or power-cap; clear ends the throttle.")],
    lab: LabOption = None,
) -> None:
    """Slow one GPU down, as a power brake, a cooling fault or a power cap would (the slow-job fault).

    On that GPU, while it runs a job (training values; signals/dcgm.md has the bases):

    - **power-brake**: DCGM_FI_DEV_SM_CLOCK 1980 → 990 MHz (halved), POWER_USAGE ~550 → ~130 W,
      GPU_TEMP falls toward ~33 C.
    - **thermal**: SM clock → 1485 MHz (75 %), GPU_TEMP → 87 C (τ 60 s), power → ~275 W.
    - **power-cap**: POWER_USAGE pinned at 350 W, SM clock → ~1635-1650 MHz.

    GPU_UTIL and GR_ENGINE_ACTIVE stay (kernels still run), DRAM_ACTIVE and NVLink fall with the
    clock. The job's other GPUs on the node (same hpc_job; same pod in a Run:ai lab) wait for it at
    every all-reduce: their PIPE_TENSOR_ACTIVE, DRAM_ACTIVE and NVLink fall to the straggler's clock
    share (×0.5 for a power brake) and their power with them; their SM clock and GPU_UTIL do not
    move. GPUs of other jobs do not change. With the opt-in `throttle` collectors profile,
    DCGM_FI_DEV_POWER_VIOLATION (power-cap) or DCGM_FI_DEV_THERMAL_VIOLATION (thermal) count 1 s per
    second. `clear` restores the GPU at the next scrape (temperature relaxes with τ 60 s).
    """
    from lab.attach.faults import FaultError, inject_throttle
    from lab.dcgm.shim import CAUSES, write_throttle

    try:
        handle = kinds.attach(engine.require_engine(), lab)
        path = inject_throttle(handle.blueprint, node, gpu, cause, tuple(CAUSES), write_throttle)
    except (*KNOWN_ERRORS, FaultError) as error:
        fail(error)
    typer.echo(f"{node} GPU {gpu}: throttle {cause} ({path})")


@app.command("pcie")
def fault_pcie(
    node: Annotated[str, typer.Argument(help="Slurm node name, e.g. dgx-003.")],
    gpu: Annotated[int, typer.Argument(help="GPU index on that node (0-7 on a DGX).")],
    per_minute: Annotated[
        int, typer.Argument(metavar="PER_MINUTE", help="PCIe replays a minute, e.g. 60; 0 ends the fault.")
    ],
    lab: LabOption = None,
) -> None:
    """A failing PCIe link: the GPU's link resends packets its receiver rejected.

    DCGM_FI_DEV_PCIE_REPLAY_COUNTER (a default counter) grows by PER_MINUTE a minute on that GPU,
    on top of a healthy link's rare replay; the transfers succeed, slower, so no job fails and no
    node drains. DCGM's health watch warns above 8 replays a minute (signals/dcgm.md), and so does
    the lab's `GPUPCIeReplaysHigh`. A site reseats the card or replaces its riser or retimer. 0 ends
    the fault; the counter keeps its count, as NVML's does until the driver reloads.
    """
    from lab.attach.faults import FaultError, inject_pcie_replays
    from lab.dcgm.shim import MAX_REPLAYS_PER_MIN, write_pcie_replays

    try:
        handle = kinds.attach(engine.require_engine(), lab)
        if handle.kind != "slurm":
            raise running.LabError(
                f"lab '{handle.name}' is a {handle.kind} lab: `lab fault pcie` is for Slurm labs."
            )
        path = inject_pcie_replays(
            handle.blueprint, node, gpu, per_minute, MAX_REPLAYS_PER_MIN, write_pcie_replays
        )
    except (*KNOWN_ERRORS, FaultError) as error:
        fail(error)
    typer.echo(f"{node} GPU {gpu}: {per_minute} PCIe replays a minute ({path})")
