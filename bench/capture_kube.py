"""Capture the real Kubernetes path of a Run:ai lab for provenance: per scenario, the Events API's
events (one JSON per line, the first few of every reason and source), the head of every KAI log, and
the exposition text of every real binary's /metrics, as scraped inside the lab's container.

    python3 bench/capture_kube.py [--out captures/runai-kai-0.13.0] [--settle-s 60]

Brings the shipped Run:ai blueprint up once per scenario (time scale as the lab tests use it) and
takes it down at the end. Writes only under --out.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

from lab import contract, versions
from lab.blueprint.runai_blueprint import load
from lab.contract import container_name
from lab.paths import BLUEPRINTS_DIR, PROJECT_ROOT, lab_state_dir

SCENARIOS = {"gpu-fault": "20", "quota-exhaustion": "60", "preemption-storm": "60"}
EVENTS_PER_KIND = 3  # the first of each (reason, source, kind): shape, not volume
LOG_LINES = 150
CAPTURE_DIR = PROJECT_ROOT / "captures" / f"runai-kai-{versions.KAI_SCHEDULER_VERSION.lstrip('v')}"


def run_lab(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "lab", *args], check=True, capture_output=True, text=True)


def scrape_in_container(container: str, port: int) -> str:
    """The /metrics text of a process in the lab's container, as Prometheus would get it there."""
    url = f"http://127.0.0.1:{port}/metrics"
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}).read().decode(), end='')"
    return subprocess.run(
        ["docker", "exec", container, "python3", "-c", code], check=True, capture_output=True, text=True
    ).stdout


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=CAPTURE_DIR,
    )
    parser.add_argument(
        "--settle-s", type=float, default=60.0, help="wall seconds each scenario runs before capture"
    )
    args = parser.parse_args()
    model = load(BLUEPRINTS_DIR / "runai.yaml")
    container = container_name(model.name, "runai")
    state = lab_state_dir(model.name) / "runai"
    try:
        for scenario, scale in SCENARIOS.items():
            out = args.out / scenario
            out.mkdir(parents=True, exist_ok=True)
            run_lab(
                "up",
                "--blueprint",
                str(BLUEPRINTS_DIR / "runai.yaml"),
                "--scenario",
                scenario,
                "--time-scale",
                scale,
                "-q",
            )
            time.sleep(args.settle_s)
            kept: collections.Counter[tuple[str, str, str]] = collections.Counter()
            with (out / "events.jsonl").open("w", encoding="utf-8") as stream:
                for line in (state / "events.jsonl").read_text(encoding="utf-8").splitlines():
                    event = json.loads(line)
                    key = (
                        event["reason"],
                        event.get("source", {}).get("component", ""),
                        event["involvedObject"]["kind"],
                    )
                    kept[key] += 1
                    if kept[key] <= EVENTS_PER_KIND:
                        stream.write(json.dumps(event, sort_keys=True) + "\n")
            (out / "event-counts.json").write_text(
                json.dumps({" / ".join(k): v for k, v in kept.most_common()}, indent=1) + "\n"
            )
            for log in sorted((state / "logs").glob("kai-*.log")):
                lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[:LOG_LINES]
                (out / log.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
            ports = {
                f"kai-scheduler-{p.name}": contract.kai_scheduler_port(i)
                for i, p in enumerate(model.node_pools)
            }
            ports |= {
                n: contract.KUBE_PORTS[n] for n in ("kube-state-metrics", "kai-queuecontroller", "kai-binder")
            }
            ports["runai-driver"] = contract.RUNAI_API_PORT
            for name, port in ports.items():
                (out / f"metrics-{name}.txt").write_text(
                    scrape_in_container(container, port), encoding="utf-8"
                )
            print(f"{scenario}: {sum(kept.values())} events, {len(kept)} kinds -> {out}")
    finally:
        run_lab("down", "--lab", model.name, "--purge")
    return 0


if __name__ == "__main__":
    sys.exit(main())
