"""`lab capture` and `lab dump`: the I/O around the pure modules of this package.

Targets come from Prometheus' own target list; each is scraped from inside the lab network (curl in
the Prometheus container), so a capture sees exactly what Prometheus sees.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lab import contract, exposition, promql, versions
from lab.attach.running import RunningLab
from lab.capture import families, signals
from lab.capture.diff import Problem, diff
from lab.dcgm.shim import UPSTREAM_TAG
from lab.paths import PROJECT_ROOT
from lab.progress import Progress

# Scrape job → the signals/ file that documents it. Prometheus' self-scrape is infrastructure.
SIGNALS_BY_JOB = {"slurm": "slurm.md", "dcgm": "dcgm.md", "runai": "runai.md", "slurmctld": "slurm-native.md"}
COMPONENTS = {
    "slurm": f"SckyzO/slurm_exporter {versions.SLURM_EXPORTER_VERSION}",
    "dcgm": f"aifactory-lab DCGM shim {versions.LAB_VERSION} (emulates dcgm-exporter {UPSTREAM_TAG})",
    "prometheus": f"Debian prometheus {versions.PROMETHEUS_DEB_VERSION}",
}
PACKAGES = {
    "controller": ["slurmctld", "slurm-client", "slurm-wlm-basic-plugins", "munge"],
    "prometheus": ["prometheus"],
}


TARGETS_TIMEOUT_S = 60  # a fresh Prometheus discovers static targets at once, scrapes within one interval


class CaptureError(RuntimeError):
    """A capture that could not be taken; the message says why."""


@dataclass(frozen=True)
class Target:
    job: str
    instance: str
    url: str
    endpoint: str = ""  # slurmctld's targets share one instance, one per endpoint

    @property
    def file_name(self) -> str:
        suffix = f"-{self.endpoint}" if self.endpoint else ""
        return re.sub(r"[^A-Za-z0-9_.-]", "_", self.instance + suffix) + ".prom"


def capture(
    lab: RunningLab, duration_s: float, interval_s: float, out: Path, progress: Progress
) -> dict[str, dict[str, Any]]:
    """Scrape every active target ``duration_s / interval_s`` times, write the files, return inventories."""
    scraper = lab.container("prometheus")
    if scraper is None:
        raise CaptureError(f"lab '{lab.name}' has no Prometheus container. Fix: `lab up`.")
    targets = _scraped_targets(lab.prometheus_url, progress)
    rounds = max(1, round(duration_s / interval_s))
    started = datetime.now(UTC)
    texts: dict[Target, list[tuple[str, str]]] = {target: [] for target in targets}
    for number in range(1, rounds + 1):
        began = time.monotonic()
        for target in targets:
            texts[target].append((_now(), _scrape(scraper, target)))
        progress.say(f"capture round {number}/{rounds}: {len(targets)} targets")
        if number < rounds:
            time.sleep(max(0.0, interval_s - (time.monotonic() - began)))
    header = _provenance(lab, started, rounds, interval_s)
    return _write(out, texts, header)


def _scraped_targets(prometheus_url: str, progress: Progress) -> list[Target]:
    """Prometheus' targets once it has scraped each at least once (a fresh lab needs a few seconds)."""
    deadline = time.monotonic() + TARGETS_TIMEOUT_S
    while True:
        found = promql.targets(prometheus_url)
        if found and all(t["health"] != "unknown" for t in found):
            return [_target(t) for t in found]
        if time.monotonic() > deadline:
            raise CaptureError(
                f"Prometheus had not scraped every target after {TARGETS_TIMEOUT_S}s "
                f"({len(found)} known). Check `lab status` and {prometheus_url}/targets."
            )
        progress.say("waiting for Prometheus' first scrape of every target")
        time.sleep(2)


def _target(active: dict[str, Any]) -> Target:
    labels = active["labels"]
    return Target(labels["job"], labels["instance"], active["scrapeUrl"], labels.get("endpoint", ""))


def _scrape(scraper: Any, target: Target) -> str:
    curl = ["curl", "--silent", "--show-error", "--fail", "--max-time", "10"]
    if target.job == "slurmctld":  # its endpoints take the metrics user's JWT, as Prometheus sends it
        bearer = f"Authorization: Bearer $(cat {contract.SLURMCTLD_METRICS_TOKEN})"
        command = " ".join([*curl, "--header", f'"{bearer}"', f"'{target.url}'"])
        result = scraper.exec_run(["sh", "-c", command])
    else:
        result = scraper.exec_run([*curl, target.url])
    if result.exit_code != 0:
        return f"# scrape failed: {result.output.decode(errors='replace').strip()[:300]}\n"
    return str(result.output.decode("utf-8", errors="replace"))


def _write(
    out: Path, texts: dict[Target, list[tuple[str, str]]], header: list[str]
) -> dict[str, dict[str, Any]]:
    inventories: dict[str, dict[str, Any]] = {}
    by_job: dict[str, list[dict[str, exposition.Family]]] = {}
    for target, scrapes in texts.items():
        directory = out / target.job
        directory.mkdir(parents=True, exist_ok=True)
        lines = [
            "# aifactory-lab capture",
            f"# component: {COMPONENTS.get(target.job, target.job)}",
            f"# target: job={target.job} instance={target.instance} url={target.url}",
            *header,
        ]
        body = "\n".join(lines) + "\n"
        for stamp, text in scrapes:
            body += f"# scrape at {stamp}\n{text}"
            by_job.setdefault(target.job, []).append(exposition.parse(text))
        (directory / target.file_name).write_text(body, encoding="utf-8")
    for job, parsed in by_job.items():
        inventories[job] = families.build(parsed)
        (out / job / "inventory.json").write_text(
            json.dumps(inventories[job], indent=1) + "\n", encoding="utf-8"
        )
        (out / job / "inventory.md").write_text(
            f"# Inventory: {COMPONENTS.get(job, job)}\n\n" + families.markdown(inventories[job]),
            encoding="utf-8",
        )
    return inventories


def _provenance(lab: RunningLab, started: datetime, rounds: int, interval_s: float) -> list[str]:
    blueprint = lab.state_dir / "blueprint.yaml"
    digest = hashlib.sha256(blueprint.read_bytes()).hexdigest()[:16] if blueprint.exists() else "unknown"
    packages = []
    for host, names in PACKAGES.items():
        container = lab.container(host)
        if container is not None:
            query = container.exec_run(["dpkg-query", "-W", "-f=${Package}=${Version} ", *names])
            packages.append(query.output.decode(errors="replace").strip())
    return [
        f"# lab: {lab.name} (aifactory-lab {versions.LAB_VERSION}, commit {_git_commit()})",
        f"# blueprint: {blueprint.name} sha256:{digest}",
        f"# packages: {' '.join(packages)}",
        f"# started: {started.isoformat(timespec='seconds')}; {rounds} scrapes every {interval_s:g} s",
    ]


def _git_commit() -> str:
    result = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() or "unknown"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def dump(capture_dir: Path, signals_dir: Path) -> dict[str, list[Problem]]:
    """Problems per job between a capture directory and signals/; jobs without a signals file are skipped."""
    results: dict[str, list[Problem]] = {}
    for job_dir in sorted(p for p in capture_dir.iterdir() if (p / "inventory.json").is_file()):
        name = SIGNALS_BY_JOB.get(job_dir.name)
        if name is None:
            continue
        documented_path = signals_dir / name
        found = json.loads((job_dir / "inventory.json").read_text(encoding="utf-8"))
        if not documented_path.is_file():
            results[job_dir.name] = [Problem("undocumented-family", "*", f"{documented_path} does not exist")]
            continue
        documented = signals.parse(documented_path.read_text(encoding="utf-8"))
        results[job_dir.name] = diff(found, documented, f"signals/{name}")
    return results
