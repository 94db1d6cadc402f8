"""Capture a journey run on the default Slurm lab: the raw samples Prometheus stored for the series the
project's rules read, and the log lines and accounting rows of the jobs and node the journey touched.

    python3 bench/capture_journeys.py --start UNIX_TIME --job 11 --job 15 --node dgx-002 \
        [--out captures/journeys-slurm-24.11.5] [--lab default]

Run it after the journey's fault (docs/journeys.md): it reads what is already stored, from --start to
now, through Prometheus' API (a range selector evaluated at the end: every sample as scraped, no step,
no lookback), and greps the daemons' logs in the lab's containers for the job ids and the node.
Writes only under --out; tests/rules/cut_series.py turns the samples into promtool input series.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from lab import promql
from lab.blueprint.slurm_blueprint import load
from lab.contract import container_name
from lab.paths import PROJECT_ROOT

# The series the rules of ansible/roles/prometheus/files/rules/{dcgm,slurm}.yml read, and those the
# walks of docs/journeys.md query. Each selector is stored as <file>.json.
SELECTORS = {
    "dcgm-xid-errors": "DCGM_FI_DEV_XID_ERRORS",
    "dcgm-gpu-util": 'DCGM_FI_DEV_GPU_UTIL{{Hostname="{node}"}}',
    "dcgm-sm-clock": 'DCGM_FI_DEV_SM_CLOCK{{Hostname="{node}"}}',
    "dcgm-power-usage": 'DCGM_FI_DEV_POWER_USAGE{{Hostname="{node}"}}',
    "slurm-node-status": "slurm_node_status",
    "slurm-node-drain-reason-info": "slurm_node_drain_reason_info",
    "slurm-queue-pending": "slurm_queue_pending",
    "slurm-jobs-pending": "slurm_jobs_pending",
    "slurm-user-jobs-pending": "slurm_user_jobs_pending",
    "slurm-account-jobs-pending": "slurm_account_jobs_pending",
    "slurm-partition-jobs-pending": "slurm_partition_jobs_pending",
    "slurm-nodes-drain": "slurm_nodes_drain",
    "up": "up",
    "alerts": "ALERTS",
}
LOGS = {  # container role → files searched for the job ids and the node
    "controller": ["/var/log/slurm/slurmctld.log"],
    "node": [
        "/var/log/slurm/slurmd-{node}.log",
        "/var/log/slurm/dcgm-xid-check.log",
        "/var/log/slurm/dcgm-job-mapping.log",
    ],
}


def store_series(prometheus: str, selectors: dict[str, str], start: float, end: float, out: Path) -> None:
    """Write each selector's raw samples from ``start`` to ``end`` to ``out/<file>.json`` (Prometheus'
    range selector evaluated at ``end``: every sample as scraped, no step, no lookback)."""
    window = f"{int(end - start) + 1}s"
    out.mkdir(parents=True, exist_ok=True)
    for name, selector in selectors.items():
        series = promql.raw_range(prometheus, f"{selector}[{window}]", end)
        (out / f"{name}.json").write_text(json.dumps(series, indent=1) + "\n", encoding="utf-8")
        print(f"{name}: {len(series)} series", file=sys.stderr)


def _exec(container: str, *argv: str) -> str:
    done = subprocess.run(["docker", "exec", container, *argv], capture_output=True, text=True, check=False)
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--start", type=float, required=True, help="Unix time the journey began")
    parser.add_argument("--job", action="append", required=True, help="a Slurm job id of the journey")
    parser.add_argument("--node", action="append", required=True, help="a node a fault was put on")
    parser.add_argument("--lab", default="default")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "captures" / "journeys-slurm-24.11.5")
    args = parser.parse_args()

    blueprint = load(PROJECT_ROOT / "blueprints" / "default.yaml")
    prometheus = f"http://127.0.0.1:{blueprint.ports.prometheus}"
    end = time.time()
    selectors = {name: selector.format(node=args.node[0]) for name, selector in SELECTORS.items()}
    store_series(prometheus, selectors, args.start, end, args.out)

    jobs = [f"JobId={j}( |$)|job_id={j} |job {j}( |$)|\\[{j}\\.|JOB {j} |job={j} " for j in args.job]
    pattern = "|".join([*jobs, *(f"node {n} |node={n} " for n in args.node)])
    lines = []
    hosts = [("controller", LOGS["controller"])] + [(n, LOGS["node"]) for n in args.node]
    for host, files in hosts:
        for path in files:
            found = _exec(container_name(args.lab, host), "grep", "-E", pattern, path.format(node=host))
            lines += [f"==> {host}:{path.format(node=host)} <==", found.rstrip("\n")]
        if host != "controller":
            for job in args.job:  # the job's output, where lab-gpu-app writes its CUDA error line
                found = _exec(container_name(args.lab, host), "cat", f"/tmp/journey-{job}.out")
                if found:
                    lines += [f"==> {host}:/tmp/journey-{job}.out <==", found.rstrip("\n")]
    (args.out / "logs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sacct = _exec(
        container_name(args.lab, "controller"),
        *("sacct", "-X", "-P", "-j", ",".join(args.job)),
        "-o",
        "JobID,User,Account,Partition,Submit,Start,End,State,ExitCode,NodeList,AllocTRES,Reason",
    )
    (args.out / "sacct.txt").write_text(sacct, encoding="utf-8")
    meta = {"start": args.start, "end": end, "jobs": args.job, "nodes": args.node, "lab": args.lab}
    (args.out / "window.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
