"""The report's PNG: active series per construct over time, above Slurm's running GPU jobs and the
distinct ``hpc_job`` values Prometheus saw. Drawn with matplotlib's Agg renderer, no pyplot state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def render(
    path: Path,
    title: str,
    times: Sequence[float],
    active: Mapping[str, Sequence[int]],
    labelled: Sequence[int],
    running: Sequence[tuple[float, int]],
    allowed: Sequence[int],
    distinct: Sequence[int],
    over: Sequence[float],
) -> None:
    """Write a two-panel PNG to ``path`` (a temp name renamed into place).

    Top: active series per construct, and the DCGM series that carry ``hpc_job``. Bottom: GPU jobs
    running by Slurm's accounting (``running``: exact change points), the bound with the lag
    tolerance and the distinct ``hpc_job`` values at each evaluation, a red cross where they exceed it.
    """
    try:
        from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as error:
        raise PlotUnavailable(
            "matplotlib is missing, so no PNG was drawn. Fix: pip install 'matplotlib>=3.8,<4'"
        ) from error
    when = [datetime.fromtimestamp(t, UTC) for t in times]
    figure = Figure(figsize=(11, 7), dpi=100, layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    for construct, counts in sorted(active.items()):
        top.plot(when, counts, drawstyle="steps-post", linewidth=1.2, label=construct)
    top.plot(
        when, labelled, drawstyle="steps-post", linestyle="--", linewidth=1, label="… of which carry hpc_job"
    )
    top.set_ylabel("active series")
    top.set_ylim(bottom=0)
    top.grid(alpha=0.3)
    top.legend(loc="upper left", title="construct (scrape job)", fontsize="small")
    top.set_title(title, fontsize="medium")
    bottom.plot(when, allowed, drawstyle="steps-post", linestyle=":", color="grey", label="bound (with lag)")
    bottom.plot(
        [datetime.fromtimestamp(t, UTC) for t, _ in running],
        [count for _, count in running],
        drawstyle="steps-post",
        color="tab:blue",
        linewidth=0.8,
        label="GPU jobs running (Slurm Start/End)",
    )
    bottom.plot(when, distinct, drawstyle="steps-post", color="tab:orange", label="distinct hpc_job")
    if over:
        marks = [datetime.fromtimestamp(t, UTC) for t in over]
        index = {t: i for i, t in enumerate(times)}
        bottom.scatter(marks, [distinct[index[t]] for t in over], color="red", marker="x", label="over bound")
    bottom.set_ylabel("jobs")
    bottom.yaxis.set_major_locator(MaxNLocator(integer=True))
    bottom.set_ylim(bottom=0)
    bottom.grid(alpha=0.3)
    bottom.legend(loc="upper left", fontsize="small")
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    bottom.set_xlabel("time (UTC)")
    temporary = path.with_name(f".{path.name}.tmp")
    figure.savefig(temporary, format="png")
    temporary.replace(path)
