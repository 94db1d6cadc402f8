"""Nothing lost across the fence: the centre's VictoriaMetrics stopped for a while (10 minutes by
default, as a central store's maintenance window), started again, then the egress gateway restarted;
every raw sample the site stored of the counted egress records over the whole window is looked for at
the centre, by series and timestamp (lab/egress/crossing.py), and the time until the last one arrived.

    python3 bench/bench_fence_loss.py [--lab default] [--outage 600]

The lab test (tests/lab/test_egress.py) does the same with a 90 s outage. Prints markdown for
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lab import contract, promql
from lab.attach import running
from lab.blueprint import slurm_blueprint
from lab.bringup import daemons, engine
from lab.egress import crossing, gateway

COUNTED = ("cluster:slurm_gpus_total:sum", "Hostname_gpu_UUID:DCGM_FI_DEV_GPU_UTIL:max")
AFTER_S = 30  # samples the restarted gateway reads too
LATENCY_OFFSET_S = 40  # VictoriaMetrics answers 30 s behind now; a window's end is readable after that


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lab", default="default")
    parser.add_argument("--outage", type=float, default=600, help="seconds the centre is away (default 600)")
    args = parser.parse_args()
    blueprint = slurm_blueprint.load(running.recorded_blueprint(args.lab))
    site = f"http://127.0.0.1:{blueprint.ports.prometheus}"
    central = f"http://127.0.0.1:{blueprint.ports.central_metrics}"
    centre = engine.require_engine().containers.get(contract.container_name(args.lab, contract.CENTRAL_HOST))

    start = time.time()
    daemons.control(centre, "stop", "victoria-metrics")
    print(f"the centre's VictoriaMetrics stopped; back in {args.outage:.0f} s", file=sys.stderr)
    try:
        time.sleep(args.outage)  # the outage under test
    finally:
        daemons.control(centre, "start", "victoria-metrics")
    back = time.time()
    gateway.restart(args.lab)
    end = time.time() + AFTER_S
    time.sleep(max(0.0, end + LATENCY_OFFSET_S - time.time()))
    rows = []
    for record in COUNTED:
        crossed = crossing.count(site, central, record, start, end)
        while crossed.missing and time.time() - back < 900:
            time.sleep(5)
            crossed = crossing.count(site, central, record, start, end)
        rows.append((record, crossed, time.time() - back))

    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"## Loss across the fence, lab '{args.lab}', {today} ({platform.node()})\n")
    print(f"The centre away {args.outage:.0f} s, then the gateway restarted; window {end - start:.0f} s.\n")
    print(
        "| record | samples at the site | at the centre | missing | all there, after the centre came back |"
    )
    print("|---|---:|---:|---:|---:|")
    for record, crossed, seconds in rows:
        print(
            f"| `{record}` | {crossed.at_site} | {crossed.crossed} | {len(crossed.missing)} | "
            f"{'≤ ' if not crossed.missing else '> '}{seconds:.0f} s |"
        )
    # The centre is up again: an instant query answers (and the gateway's queue is empty).
    promql.query(central, "vector(1)")
    return 0 if all(not crossed.missing for _, crossed, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
