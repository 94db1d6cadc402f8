"""Capture a drill run (and `lab fault`s) on the default Slurm lab: the raw samples Prometheus stored for
the series their alerts read, and every notification the lab's alert receiver got, from --start to now.

    lab drill xid-storm dbd-outage --out /tmp/drills      # note the time before it
    lab fault remap dgx-001 7 --failed                    # then reset and replace (docs/alerts.md)
    # a stale id in a GPU's mapping file, then a job on that GPU (captures/…/README.md)
    python3 bench/capture_drills.py --start UNIX_TIME [--out captures/drills-alerts-slurm-24.11.5]
        [--lab slurm-26-05 --blueprint blueprints/slurm-26.05.yaml]

Samples are read as bench/capture_journeys.py reads them (a range selector evaluated at the end); the
receiver's lines are copied as they are (lab/alert_receiver.py). tests/rules/cut_series.py turns the
samples into promtool input series; tests/unit/drill reads the notifications.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from capture_journeys import store_series  # its neighbour in bench/

from lab import contract
from lab.blueprint.slurm_blueprint import load
from lab.drill.checks import unix
from lab.paths import PROJECT_ROOT

# What the alerts read, and the alerts themselves. A GPU fault family keeps only the series of GPUs
# that had the fault (a non-zero value in the window): the other 30-odd GPUs' zeros say nothing.
SELECTORS = {
    "slurm-scheduler-dbd-queue-size": "slurm_scheduler_dbd_queue_size",
    "scrape-duration-seconds": 'scrape_duration_seconds{job="slurm"}',
    "prometheus-notifications-errors-total": "prometheus_notifications_errors_total",
    "dcgm-xid-errors": "DCGM_FI_DEV_XID_ERRORS",
    "dcgm-row-remap-failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "dcgm-gpu-util": 'DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}',
    "dcgm-pcie-replay-counter": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "slurm-node-cpu-alloc": "slurm_node_cpu_alloc",
    "slurmctld-node-gpus-alloc": "slurmctld_node_gpus_alloc",  # Slurm 26.05's own, renamed by the lab
    "slurmctld-bf-when-last-cycle": "slurmctld_bf_when_last_cycle",
    "slurmctld-sched-stats-timestamp": "slurmctld_sched_stats_timestamp",
    "slurmctld-schedule-cycle-cnt": "slurmctld_schedule_cycle_cnt",
    "slurm-scheduler-last-cycle": "slurm_scheduler_last_cycle",  # the pinned exporter's sdiag "Last cycle"
    "slurm-scheduler-backfill-last-cycle": "slurm_scheduler_backfill_last_cycle",
    "slurm-queue-pending": "slurm_queue_pending",
    "up": "up",
    "alerts": "ALERTS",
}
GPU_FAULTS = ("dcgm-xid-errors", "dcgm-row-remap-failure", "dcgm-pcie-replay-counter")


def keep_faulted_gpus(path: Path) -> None:
    """Rewrite a family's file with the series of the GPUs that had a non-zero value only."""
    series = json.loads(path.read_text(encoding="utf-8"))
    faulted = {
        (s["metric"]["Hostname"], s["metric"]["gpu"]) for s in series if any(float(v) for _, v in s["values"])
    }
    kept = [s for s in series if (s["metric"]["Hostname"], s["metric"]["gpu"]) in faulted]
    path.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--start", type=float, required=True, help="Unix time the drill run began")
    parser.add_argument("--lab", default="default")
    parser.add_argument(
        "--blueprint",
        type=Path,
        default=PROJECT_ROOT / "blueprints" / "default.yaml",
        help="the lab's blueprint",
    )
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "captures" / "drills-alerts-slurm-24.11.5")
    args = parser.parse_args()

    blueprint = load(args.blueprint)
    end = time.time()
    store_series(f"http://127.0.0.1:{blueprint.ports.prometheus}", SELECTORS, args.start, end, args.out)
    for name in GPU_FAULTS:
        keep_faulted_gpus(args.out / f"{name}.json")
    received = contract.alerts_dir(args.lab) / contract.ALERTS_FILE
    lines = [
        line
        for line in received.read_text(encoding="utf-8").splitlines()
        if line.strip() and unix(json.loads(line)["received_at"]) >= args.start
    ]
    (args.out / "notifications.jsonl").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    print(f"notifications: {len(lines)}", file=sys.stderr)
    meta = {"start": args.start, "end": end, "lab": args.lab}
    (args.out / "window.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
