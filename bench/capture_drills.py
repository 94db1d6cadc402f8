"""Capture a drill run (and `lab fault`s) on the default Slurm lab: the raw samples Prometheus stored for
the series their alerts read, and every notification the lab's alert receiver got, from --start to now.

    lab drill xid-storm dbd-outage --out /tmp/drills      # note the time before it
    lab fault remap dgx-001 7 --failed                    # then reset and replace (docs/alerts.md)
    # a stale id in a GPU's mapping file, then a job on that GPU (captures/…/README.md)
    python3 bench/capture_drills.py --start UNIX_TIME [--out captures/drills-alerts-slurm-24.11.5]

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

SELECTORS = {  # what the drills' expected alerts read, and the alerts themselves
    "slurm-scheduler-dbd-queue-size": "slurm_scheduler_dbd_queue_size",
    "slurm-scheduler-threads": "slurm_scheduler_threads",
    "dcgm-xid-errors": "DCGM_FI_DEV_XID_ERRORS",
    "dcgm-row-remap-failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "dcgm-gpu-util": 'DCGM_FI_DEV_GPU_UTIL{hpc_job!=""}',
    "up": "up",
    "alerts": "ALERTS",
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--start", type=float, required=True, help="Unix time the drill run began")
    parser.add_argument("--lab", default="default")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "captures" / "drills-alerts-slurm-24.11.5")
    args = parser.parse_args()

    blueprint = load(PROJECT_ROOT / "blueprints" / "default.yaml")
    end = time.time()
    store_series(f"http://127.0.0.1:{blueprint.ports.prometheus}", SELECTORS, args.start, end, args.out)
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
