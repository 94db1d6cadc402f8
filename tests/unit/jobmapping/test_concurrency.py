"""Many jobs at once on one node, with a reader doing what dcgm-exporter does on every scrape."""

import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.race

JOBS = 240
GPUS = 8
WORKERS = 16

# What hpc.go does per scrape: list the directory, keep ^\d+(\.\d+)?$, open and read each file.
# It records every read that a real exporter would have turned into a bad label or an HTTP 500.
READER = r"""
import json, os, re, sys
directory, stop = sys.argv[1], sys.argv[2]
name_ok = re.compile(r"^\d+(\.\d+)?$").match
seen, stats = set(), {"listings": 0, "reads": 0, "reads_with_jobs": 0,
                      "torn": [], "duplicates": [], "vanished": []}
ready = False
while not os.path.exists(stop):
    names = [n for n in os.listdir(directory) if name_ok(n)]
    stats["listings"] += 1
    stats["vanished"] += sorted(seen - set(names))
    for name in names:
        try:
            with open(os.path.join(directory, name), "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            stats["vanished"].append(name)
            continue
        seen.add(name)
        stats["reads"] += 1
        lines = data.decode("ascii", "replace").split("\n")
        if lines[-1] != "":
            stats["torn"].append([name, data.decode("ascii", "replace")])
        lines = lines[:-1]
        if any(not line.isdigit() for line in lines):
            stats["torn"].append([name, data.decode("ascii", "replace")])
        if len(set(lines)) != len(lines):
            stats["duplicates"].append([name, data.decode("ascii", "replace")])
        stats["reads_with_jobs"] += bool(lines)
    if not ready:
        print("ready", flush=True)
        ready = True
print(json.dumps(stats), flush=True)
"""


def job_gpus(job: int) -> list[int]:
    """1-4 GPUs per job, always including job % 8 so every GPU gets a file."""
    rng = random.Random(job)
    return sorted({job % GPUS, *rng.sample(range(GPUS), rng.randint(0, 3))})


def test_concurrent_prolog_epilog_pairs_never_tear_lose_or_duplicate(node):
    node.dir.mkdir()
    stop = node.base / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(node.dir), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )

    def one_job(job: int) -> list[str]:
        """prolog, check the id landed (no lost update), epilog; returns what went wrong."""
        gpus = ",".join(map(str, job_gpus(job)))
        problems = []
        for action in ("prolog", "epilog"):
            env = node.env(
                SLURM_SCRIPT_CONTEXT=f"{action}_slurmd", SLURM_JOB_ID=str(job), SLURM_JOB_GPUS=gpus
            )
            done = subprocess.run(
                node.command(node.PROLOG), env=env, capture_output=True, timeout=30, check=False
            )
            if done.returncode != 0 or done.stdout or done.stderr:
                problems.append(f"{action} {job}: {done}")
            if action == "prolog":
                for gpu in gpus.split(","):
                    if str(job) not in node.ids(gpu):
                        problems.append(f"job {job} missing from gpu {gpu} after its prolog")
        return problems

    try:
        assert reader.stdout is not None
        assert reader.stdout.readline() == "ready\n"  # the reader runs before the first job
        with ThreadPoolExecutor(WORKERS) as pool:
            problems = [p for result in pool.map(one_job, range(1000, 1000 + JOBS)) for p in result]
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=60)
    stats = json.loads(out)

    assert problems == []
    assert stats["torn"] == []
    assert stats["duplicates"] == []
    assert stats["vanished"] == []
    assert stats["reads_with_jobs"] > 0  # the reader really overlapped with running jobs
    for gpu in range(GPUS):
        assert node.read(str(gpu)) == b"", f"stale ids on gpu {gpu}"
    assert sorted(p.name for p in node.dir.iterdir()) == [".lock", *map(str, range(GPUS))]
    records = [node.parse(line) for line in node.log_lines()]  # one whole line per run
    assert sorted((r["job_id"], r["action"]) for r in records) == sorted(
        (str(job), action) for job in range(1000, 1000 + JOBS) for action in ("epilog", "prolog")
    )
    assert {r["result"] for r in records} == {"ok"}
