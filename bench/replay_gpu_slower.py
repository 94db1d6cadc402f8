"""Replay GPUSlowerThanItsJob's verdict on the DCGM shim's own GPU model (lab.dcgm.gpu_model): how
often a form of the rule fires on healthy multi-GPU jobs of each workload class (false alarms per
hour), and how soon after one GPU of the job is throttled (a cause of `lab fault throttle`).

    python bench/replay_gpu_slower.py [--hours 1] [--seeds 5]

Each job's GPUs are read every 15 s (the lab's scrape interval) as the shim reads them; the rule is
evaluated at each read over the last four reads (a 1m range) and fires after five evaluations in a
row that hold (`for: 1m`). Two forms are compared:

- median: a GPU's median SM clock over 1m under 90 % of the highest median of its job;
- shipped: a GPU's highest SM clock over 1m under 90 % of its job's highest, for GPUs whose GPU_UTIL
  was above 0 in that minute (ansible/roles/prometheus/files/rules/dcgm.yml).

This replays the model, not Prometheus: tests/lab/test_journeys.py proves the shipped rule on the lab.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable, Sequence

from lab.dcgm.gpu_model import GpuModel
from lab.dcgm.throttle import CAUSES, Cause
from lab.dcgm.workloads import PROFILES

SCRAPE_S = 15
WINDOW = 4  # reads in a 1m range
FOR_EVALUATIONS = 5  # `for: 1m`: held at 0, 15, 30, 45 and 60 s
Reads = Sequence[Sequence[int]]  # per GPU, oldest first


def median_form(clocks: Reads, utils: Reads) -> bool:
    medians = [statistics.median(c[-WINDOW:]) for c in clocks]
    return any(m < 0.9 * max(medians) for m in medians)


def shipped_form(clocks: Reads, utils: Reads) -> bool:
    highest = [max(c[-WINDOW:]) for c in clocks]
    computed = [max(u[-WINDOW:]) > 0 for u in utils]
    return any(h < 0.9 * max(highest) and busy for h, busy in zip(highest, computed, strict=True))


FORMS: dict[str, Callable[[Reads, Reads], bool]] = {"median": median_form, "shipped": shipped_form}


def replay(
    profile: str, gpus: int, seconds: float, seed: int, throttled: Cause | None = None
) -> dict[str, list[int]]:
    """The reads at which each form fires, for one job of ``gpus`` GPUs (GPU 1 ``throttled``)."""
    rng = random.Random(seed)
    models = [GpuModel(random.Random(rng.random())) for _ in range(gpus)]
    clocks: list[list[int]] = [[] for _ in range(gpus)]
    utils: list[list[int]] = [[] for _ in range(gpus)]
    held = dict.fromkeys(FORMS, 0)
    fired: dict[str, list[int]] = {name: [] for name in FORMS}
    for read in range(int(seconds // SCRAPE_S)):
        for index, model in enumerate(models):
            values = model.read(
                read * SCRAPE_S, [PROFILES[profile]], throttle=throttled if index == 1 else None
            )
            clocks[index].append(int(values["DCGM_FI_DEV_SM_CLOCK"]))
            utils[index].append(int(values["DCGM_FI_DEV_GPU_UTIL"]))
        if read + 1 < WINDOW:
            continue
        for name, form in FORMS.items():
            held[name] = held[name] + 1 if form(clocks, utils) else 0
            if held[name] == FOR_EVALUATIONS:
                fired[name].append(read)
    return fired


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hours", type=float, default=1.0, help="healthy time replayed per job (default 1)")
    parser.add_argument("--seeds", type=int, default=5, help="jobs replayed per class and size (default 5)")
    args = parser.parse_args(argv)
    print(f"false alarms per hour on healthy jobs ({args.seeds} jobs of {args.hours} h each):")
    print(f"{'class':<12} {'GPUs':>4} " + " ".join(f"{name:>8}" for name in FORMS))
    for profile in ("training", "inference", "interactive"):
        for gpus in (2, 4, 8):
            runs = [replay(profile, gpus, args.hours * 3600, seed) for seed in range(args.seeds)]
            rates = [sum(len(r[name]) for r in runs) / (args.seeds * args.hours) for name in FORMS]
            print(f"{profile:<12} {gpus:>4} " + " ".join(f"{rate:>8.1f}" for rate in rates))
    print("\nfirst firing after one GPU of a 4-GPU job is throttled (seconds; - never in 10 min):")
    for cause in CAUSES.values():
        for profile in ("training", "inference", "interactive"):
            fired = replay(profile, 4, 600, 1, cause)
            cells = [f"{fired[name][0] * SCRAPE_S:>8}" if fired[name] else f"{'-':>8}" for name in FORMS]
            print(f"{cause.name:<12} {profile:<12} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
