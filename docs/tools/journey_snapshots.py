"""PNG snapshots of a journey's key panels, drawn from a capture's raw samples (``captures/…/<series>.json``,
Prometheus' ``/api/v1/query`` of ``<selector>[<window>]``, as ``bench/capture_journeys.py`` stores them), with
the journey's alert shaded where Prometheus had it pending and firing. What a reader of docs/journeys.md
sees is what Prometheus stored, not a re-run.

    python3 docs/tools/journey_snapshots.py         # every shipped snapshot into docs/img/journey-<name>.png
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lab.paths import PROJECT_ROOT

CAPTURES = PROJECT_ROOT / "captures"
IMAGES = PROJECT_ROOT / "docs" / "img"
SCRAPE_S = 15.0  # the lab's scrape and evaluation interval: samples further apart are a gap
_SHADE = {"pending": ("gold", 0.25), "firing": ("tab:red", 0.2)}


class SnapshotError(ValueError):
    """A snapshot that cannot be drawn from its capture; the message names the file and what is missing."""


@dataclass(frozen=True)
class Panel:
    title: str
    series: str  # the capture's file stem: dcgm-sm-clock → dcgm-sm-clock.json
    match: Mapping[str, str]  # label → a regular expression its value must match in full, as PromQL's =~
    legend: tuple[str, ...]  # the labels that tell the lines apart
    unit: str


@dataclass(frozen=True)
class Snapshot:
    name: str  # docs/img/journey-<name>.png
    capture: str  # a directory of captures/
    title: str
    alert: Mapping[str, str]  # the ALERTS series of the journey's alert (alertname and its labels)
    panels: tuple[Panel, ...]
    window: tuple[float, float] | None = None  # Unix seconds; None: the capture's whole window
    faults: tuple[tuple[float, str], ...] = ()  # when the journey's faults went in (Unix seconds), and what


SHIPPED = (
    Snapshot(
        "gpu-fault-slurm",
        "journeys-slurm-24.11.5",
        "Failed job, GPU fault: XID 79 on dgx-001 GPU 3 under job 28 (GPUXIDError)",
        {"alertname": "GPUXIDError", "Hostname": "dgx-001", "gpu": "3"},
        (
            Panel(
                "GPU utilisation of job 28's GPUs",
                "dcgm-gpu-util",
                {"Hostname": "dgx-001", "hpc_job": "28"},
                ("gpu",),
                "%",
            ),
            Panel(
                "last XID of GPU 3 (a gauge: the code, not a count)",
                "dcgm-xid-errors",
                {"Hostname": "dgx-001", "gpu": "3"},
                ("err_code", "hpc_job"),
                "XID",
            ),
            Panel(
                "slurm_node_status of dgx-001",
                "slurm-node-status",
                {"node": "dgx-001"},
                ("status",),
                "1 = in",
            ),
        ),
        window=(1796293950.0, 1796294250.0),  # 10:32:30-10:37:30 UTC, job 28's part of the capture
        faults=((1796294025.0, "fault: XID 79 on GPU 3"),),  # 10:33:45, the capture's README
    ),
    Snapshot(
        "gpu-fault-runai",
        "journeys-runai-kai-0.13.0/gpu-fault",
        "Failed job, GPU fault: XID 79 on dgx-001 GPU 0 under workload train-00001 (RunaiWorkloadGPUFault)",
        {"alertname": "RunaiWorkloadGPUFault", "Hostname": "dgx-001", "gpu": "0"},
        (
            Panel(
                "GPU utilisation of pod train-00001-dbw9g's GPU",
                "dcgm-gpu-util",
                {"Hostname": "dgx-001", "pod": "train-00001-dbw9g"},
                ("gpu",),
                "%",
            ),
            Panel(
                "last XID of GPU 0 (a gauge: the code, not a count)",
                "dcgm-xid-errors",
                {"Hostname": "dgx-001", "gpu": "0"},
                ("err_code", "pod"),
                "XID",
            ),
            Panel(
                "phase of pod train-00001-dbw9g (kube_pod_status_phase)",
                "kube-pod-status-phase",
                {"pod": "train-00001-dbw9g", "phase": "Running|Failed"},
                ("phase",),
                "1 = in",
            ),
            Panel(
                "healthy GPUs of dgx-001 (runai_gpu_count_per_node)",
                "runai-gpu-count-per-node",
                {"node": "dgx-001"},
                ("node",),
                "GPUs",
            ),
        ),
        faults=((1796516220.1, "fault: XID 79 on GPU 0"),),  # 00:17:00.1, the capture's window.json
    ),
    Snapshot(
        "throttled-slurm",
        "journeys-throttle-slurm-24.11.5",
        "Slow job, throttled GPU: power brake on dgx-004 GPU 1 under job 3 (GPUSlowerThanItsJob)",
        {"alertname": "GPUSlowerThanItsJob", "Hostname": "dgx-004", "gpu": "1"},
        (
            Panel(
                "SM clock of job 3's GPUs",
                "dcgm-sm-clock",
                {"Hostname": "dgx-004", "hpc_job": "3"},
                ("gpu",),
                "MHz",
            ),
            Panel(
                "GPU utilisation of job 3's GPUs",
                "dcgm-gpu-util",
                {"Hostname": "dgx-004", "hpc_job": "3"},
                ("gpu",),
                "%",
            ),
            Panel(
                "power of job 3's GPUs",
                "dcgm-power-usage",
                {"Hostname": "dgx-004", "hpc_job": "3"},
                ("gpu",),
                "W",
            ),
        ),
        faults=((1796360866.0, "fault: power brake on GPU 1"),),  # 05:07:46, the capture's README
    ),
    Snapshot(
        "throttled-runai",
        "journeys-runai-kai-0.13.0/throttled",
        "Slow job, throttled GPU: power brake on dgx-001 GPU 3 of workload journey-throttle "
        "(RunaiGPUSlowerThanItsWorkload)",
        {"alertname": "RunaiGPUSlowerThanItsWorkload", "Hostname": "dgx-001", "gpu": "3"},
        (
            Panel(
                "SM clock of journey-throttle's GPUs (master and worker)",
                "dcgm-sm-clock",
                {"namespace": "runai-team-a", "pod": "journey-throttle-.*"},
                ("pod", "gpu"),
                "MHz",
            ),
            Panel(
                "tensor-pipe activity of journey-throttle's GPUs",
                "dcgm-pipe-tensor-active",
                {"namespace": "runai-team-a", "pod": "journey-throttle-.*"},
                ("pod", "gpu"),
                "ratio",
            ),
            Panel(
                "power of journey-throttle's GPUs",
                "dcgm-power-usage",
                {"namespace": "runai-team-a", "pod": "journey-throttle-.*"},
                ("pod", "gpu"),
                "W",
            ),
        ),
        faults=((1796515748.8, "fault: power brake on GPU 3"),),  # 00:09:08.8, the capture's window.json
    ),
    Snapshot(
        "starved-slurm",
        "journeys-slurm-24.11.5",
        "Slow job, starved: dave's job waits for dgx-003, held for repair "
        "(SlurmJobsPendingOnUnavailableNodes)",
        {"alertname": "SlurmJobsPendingOnUnavailableNodes", "user": "dave"},
        (
            Panel("slurm_user_jobs_pending", "slurm-user-jobs-pending", {}, ("user",), "jobs"),
            Panel(
                "slurm_node_status of dgx-003",
                "slurm-node-status",
                {"node": "dgx-003"},
                ("status",),
                "1 = in",
            ),
        ),
        window=(1796293350.0, 1796295000.0),  # 10:22:30-10:50:00 UTC: the wait, pending and firing
    ),
    Snapshot(
        "starved-runai",
        "journeys-runai-kai-0.13.0/starved",
        "Slow job, starved: team-a's gang dist-00002 reclaimed twice for team-b's quota "
        "(RunaiWorkloadReclaimedRepeatedly)",
        {"alertname": "RunaiWorkloadReclaimedRepeatedly", "workload_name": "dist-00002"},
        (
            Panel(
                "GPUs allocated to team-a's gangs (runai_allocated_gpu_count_per_workload)",
                "runai-allocated-gpu-count-per-workload",
                {"workload_name": "dist-0000[12]"},
                ("workload_name",),
                "GPUs",
            ),
            Panel(
                "evictions KAI counted for dist-00002's gang of 2 (kai_pod_group_evicted_pods_total)",
                "kai-pod-group-evicted-pods-total",
                {"podgroup": "pg-dist-00002-.*"},
                ("action",),
                "pods",
            ),
            Panel(
                "GPUs allocated per queue; quota: team-a 24, team-b 16 (kai_queue_allocated_gpus)",
                "kai-queue-allocated-gpus",
                {"queue_name": "team-[ab]-default"},
                ("queue_name",),
                "GPUs",
            ),
        ),
        # 00:36:02.5 and 00:36:42.5, KAI's log lines (the capture's window.json)
        faults=((1796517362.5, "1st reclaim of dist-00002"), (1796517402.5, "2nd reclaim of dist-00002")),
    ),
)


def load_series(capture: Path, panel: Panel) -> list[tuple[str, list[tuple[float, float]]]]:
    """The panel's series from the capture: (legend text, samples), in legend order."""
    path = capture / f"{panel.series}.json"
    try:
        document: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SnapshotError(f"{path}: not a capture's series file ({error})") from error
    chosen = []
    for entry in document:
        labels = entry["metric"]
        if all(re.fullmatch(pattern, labels.get(key, "")) for key, pattern in panel.match.items()):
            legend = ", ".join(f"{key}={labels[key]}" for key in panel.legend if key in labels)
            chosen.append((legend, [(float(t), float(v)) for t, v in entry["values"]]))
    if not chosen:
        raise SnapshotError(f"{path}: no series with {dict(panel.match)} for the panel {panel.title!r}")
    return sorted(chosen)


def alert_spans(capture: Path, alert: Mapping[str, str]) -> dict[str, list[tuple[float, float]]]:
    """alertstate → the spans (start, end) in which Prometheus had the alert in that state."""
    path = capture / "alerts.json"
    document: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    spans: dict[str, list[tuple[float, float]]] = {"pending": [], "firing": []}
    for entry in document:
        labels = entry["metric"]
        if labels.get("alertstate") in spans and all(labels.get(k) == v for k, v in alert.items()):
            spans[labels["alertstate"]] += _runs([float(t) for t, _ in entry["values"]])
    if not spans["firing"] and not spans["pending"]:
        raise SnapshotError(f"{path}: Prometheus never had {dict(alert)} pending or firing")
    return spans


def _runs(times: Sequence[float]) -> list[tuple[float, float]]:
    """Evaluation times → contiguous spans, each extended by one interval (the state held until then)."""
    runs: list[tuple[float, float]] = []
    for moment in sorted(times):
        if runs and moment - runs[-1][1] <= 2 * SCRAPE_S:
            runs[-1] = (runs[-1][0], moment)
        else:
            runs.append((moment, moment))
    return [(start, end + SCRAPE_S) for start, end in runs]


def _broken_at_gaps(samples: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The samples as steps that each hold until the next scrape, broken (a NaN) where the next sample
    is a missed scrape or more away: the line stops where the series was absent (a pod that released
    its GPU, a gang reclaimed, Prometheus down) instead of bridging the gap, and a lone sample shows."""
    broken: list[tuple[float, float]] = []
    for index, (moment, value) in enumerate(samples):
        broken.append((moment, value))
        if index + 1 == len(samples) or samples[index + 1][0] - moment > 1.5 * SCRAPE_S:
            broken += [(moment + SCRAPE_S, value), (moment + SCRAPE_S, float("nan"))]
    return broken


def render(snapshot: Snapshot, out: Path, captures: Path = CAPTURES) -> Path:
    """Draw ``snapshot`` to ``out`` (a temporary name renamed into place)."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter, num2date
    from matplotlib.figure import Figure

    capture = captures / snapshot.capture
    spans = alert_spans(capture, snapshot.alert)
    low, high = snapshot.window or (-float("inf"), float("inf"))
    figure = Figure(figsize=(11, 2.4 * len(snapshot.panels) + 0.6), dpi=100, layout="constrained")
    axes = figure.subplots(len(snapshot.panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, snapshot.panels, strict=True):
        for legend, samples in load_series(capture, panel):
            shown = _broken_at_gaps([(t, v) for t, v in samples if low <= t <= high])
            if shown:
                ax.plot([_when(t) for t, _ in shown], [v for _, v in shown], drawstyle="steps-post",
                        linewidth=1.2, label=legend or panel.series)  # fmt: skip
        for (when, what), style in zip(snapshot.faults, ("--", ":", "-."), strict=False):
            if low <= when <= high:
                ax.axvline(_when(when), color="black", linestyle=style, linewidth=1.0, label=what)
        for state, (colour, alpha) in _SHADE.items():
            for index, (start, end) in enumerate(spans[state]):
                if end >= low and start <= high:
                    label = f"{snapshot.alert['alertname']} {state}" if index == 0 else None
                    ax.axvspan(
                        _when(max(start, low)), _when(min(end, high)), color=colour, alpha=alpha, label=label
                    )
        ax.set_title(panel.title, fontsize="medium", loc="left")
        ax.set_ylabel(panel.unit)
        ax.set_ylim(bottom=0)  # every panel's series are counts, clocks, watts or 0/1 states
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    locator = AutoDateLocator()  # type: ignore[no-untyped-call]
    axes[-1].xaxis.set_major_locator(locator)
    # The date goes into the label: the formatter's offset text would sit on top of it.
    formatter = ConciseDateFormatter(locator, show_offset=False)  # type: ignore[no-untyped-call]
    axes[-1].xaxis.set_major_formatter(formatter)
    day = num2date(axes[-1].get_xlim()[0]).date()  # type: ignore[no-untyped-call]
    axes[-1].set_xlabel(f"time (UTC) on {day}, as Prometheus stored it: captures/{snapshot.capture}/")
    figure.suptitle(snapshot.title, fontsize="large")
    out.parent.mkdir(parents=True, exist_ok=True)
    temporary = out.with_name(f".{out.name}.tmp")
    figure.savefig(temporary, format="png", metadata={"Software": None})
    temporary.replace(out)
    return out


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def main() -> int:
    for snapshot in SHIPPED:
        written = render(snapshot, IMAGES / f"journey-{snapshot.name}.png")
        print(f"{written.relative_to(PROJECT_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
