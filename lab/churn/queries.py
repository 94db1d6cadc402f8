"""The only I/O of `lab churn`: PromQL against the lab's Prometheus, and sacct on its controller.

Everything heavy runs inside Prometheus: a query returns counts per family, per ``hpc_job`` or per
GPU and step, never the raw series, so an answer grows with families × evaluations, not with series
(a day of the default lab: ~1.5 M points, nearly all from the per-family active counts). Long
windows are cut into chunks of at most 3 h at 15 s, under Prometheus' 11,000 points per series and
well under its ``--query.max-samples`` (50 M by default); a chunk that still loads too many samples
is halved and asked again. The queries of a chunk run a few at a time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from docker.models.containers import Container

from lab import promql
from lab.churn.jobs import sacct_argv
from lab.churn.measurements import Measurements
from lab.churn.window import Window, iso, parse_duration

WITNESS = "DCGM_FI_DEV_GPU_UTIL"
SAMPLE_BUDGET = 20_000_000  # per query; Prometheus refuses above --query.max-samples (default 50 M)
MAX_CHUNK_STEPS = 720  # 3 h at 15 s: an answer holds at most families × 720 points
PARALLEL_QUERIES = 4  # Prometheus evaluates queries concurrently (--query.max-concurrency, default 20)
SACCT_MARGIN_S = 60  # ask sacct for a little more than the window; the bound check needs the edges
_JOB_NAME = re.compile(r"^[A-Za-z0-9_.:-]+$")


class ChurnError(RuntimeError):
    """The report cannot be made; the message says why and what to do."""


def scrape_intervals(url: str) -> dict[str, float]:
    """Scrape interval of every active scrape job, from Prometheus' target list."""
    intervals: dict[str, float] = {}
    for target in promql.targets(url):
        job = target.get("labels", {}).get("job", "")
        interval = target.get("scrapeInterval")
        if job and interval:
            intervals[job] = parse_duration(str(interval))
    return intervals


def collect(
    url: str, window: Window, dcgm_job: str, scrape_interval_s: float, say: Callable[[str], None]
) -> Measurements:
    """Run every query over every chunk of the window and fold the answers."""
    if not _JOB_NAME.match(dcgm_job):
        raise ChurnError(f"--dcgm-job {dcgm_job!r}: a scrape job name has only letters, digits and _.:-")
    found = Measurements.empty(window, dcgm_job)
    found.fresh_s = math.ceil(scrape_interval_s) + 1

    def ask(query: str, at: float | None = None) -> list[promql.Series]:
        """One instant query, counted with the range queries."""
        found.queries += 1
        return promql.query(url, query, at=at)

    found.witness = _witness(ask, dcgm_job, window)
    asked = queries(dcgm_job, window.step_s, found.fresh_s, found.witness)
    folds = _folds(found)
    estimate = _series_estimate(ask)
    pending = window.chunks(min(MAX_CHUNK_STEPS, max(1, SAMPLE_BUDGET // (2 * estimate))))
    done = 0
    with ThreadPoolExecutor(max_workers=PARALLEL_QUERIES) as pool:
        while pending:
            chunk = pending.pop(0)
            try:
                answers = _ask(pool, url, asked, chunk)
            except promql.PrometheusError as error:
                if "too many samples" not in str(error) or chunk.steps == 1:
                    raise
                pending[:0] = chunk.chunks((chunk.steps + 1) // 2)
                continue
            for name, result in answers.items():
                fold = folds[name]
                for item in result:
                    labels = item["metric"]
                    for t, value in item["values"]:
                        fold(window.index(float(t)), labels, float(value))
            found.queries += len(asked)
            done += chunk.steps
            say(f"Prometheus: {done}/{window.steps} steps ({iso(chunk.end)})")
    found.tsdb_head = _tsdb_head(ask, window)
    return found


def queries(dcgm_job: str, step_s: int, fresh_s: int, witness: str) -> dict[str, str]:
    """Every range query `lab churn` asks, by name: the single source of the PromQL it runs.

    The ``hpc_job`` queries count only series of each target's latest scrape: a GPU's job copies
    count at t when that GPU's ``witness`` family sample with the same id is at most ``fresh_s``
    old (all families of a GPU come from one scrape). Without this, series that vanished while
    Prometheus was down (no staleness marker) stay in results for the lookback, 5 min by default.
    """
    every = '{job!=""}'
    dcgm = f'{{job="{dcgm_job}"}}'
    raw = f'{{job="{dcgm_job}", hpc_job!=""}}'
    fresh = f'timestamp({witness}{{job="{dcgm_job}", hpc_job!=""}}) > time() - {fresh_s}'
    labelled = f"{raw} and on (instance, gpu, GPU_I_ID, hpc_job) ({fresh})"
    on_gpus = f'{{job="{dcgm_job}", gpu!=""}}'
    per_gpu = f"count by (instance, gpu) ({labelled})"
    before = f"{every} offset {step_s}s"

    def named(selector: str) -> str:  # the metric name as a plain label, so `unless` matches by family too
        return f'label_replace({selector}, "churn_family", "$1", "__name__", "(.+)")'

    # Nodes with no job and a good scrape (a failed scrape leaves only Prometheus' own series).
    rest = (
        f"count by (instance) ({dcgm}) unless on (instance) ({labelled})"
        f' and on (instance) (up{{job="{dcgm_job}"}} == 1)'
    )
    return {
        "created": f"count by (job, __name__) ({named(every)} unless {named(before)})",
        "ended": f"count by (job, __name__) ({named(before)} unless {named(every)})",
        "active": f"count by (job, __name__) ({every})",
        "hpc_job": f"count by (hpc_job) ({labelled})",
        "labelled_gpus": f"count({per_gpu})",
        "busiest_gpu": f"max({per_gpu})",
        "families_per_gpu": f"count(count by (__name__) ({on_gpus}))",
        "nodes_by_gpus": f'count_values("gpus", count by (instance) (count by (instance, gpu) ({on_gpus})))',
        "node_at_rest_min": f"min({rest})",
        "node_at_rest_max": f"max({rest})",
        "up": 'avg by (job) (up{job!=""})',
        "scrape_duration": 'avg by (job) (scrape_duration_seconds{job!=""})',
        "scrape_duration_max": 'max by (job) (scrape_duration_seconds{job!=""})',
    }


Fold = Callable[[int, dict[str, str], float], None]


def _folds(found: Measurements) -> dict[str, Fold]:
    """For each query, how one answered sample (evaluation index, labels, value) is kept."""

    def family(labels: dict[str, str]) -> tuple[str, str]:
        return labels.get("job", ""), labels.get("__name__", "")

    def hpc_job(i: int, labels: dict[str, str], n: float) -> None:
        found.hpc_job[i][labels.get("hpc_job", "")] = int(n)

    def gpus(i: int, labels: dict[str, str], n: float) -> None:
        found.labelled_gpus[i] = int(n)

    def busiest(i: int, labels: dict[str, str], n: float) -> None:
        found.max_series_on_one_gpu[i] = int(n)

    def families(i: int, labels: dict[str, str], n: float) -> None:
        found.families_per_gpu = max(found.families_per_gpu, int(n))

    def nodes(i: int, labels: dict[str, str], n: float) -> None:
        shape = int(labels.get("gpus", "0"))
        found.nodes_by_gpus[shape] = max(found.nodes_by_gpus.get(shape, 0), int(n))

    def scrape(kind: str) -> Fold:
        def add(i: int, labels: dict[str, str], n: float) -> None:
            stat = found.scrape_stats.setdefault((labels.get("job", ""), kind), [0.0, 0, n])
            stat[0], stat[1], stat[2] = stat[0] + n, stat[1] + 1, max(stat[2], n)

        return add

    def at_rest(low: bool) -> Fold:
        def add(i: int, labels: dict[str, str], n: float) -> None:
            current = found.node_series_at_rest or (int(n), int(n))
            found.node_series_at_rest = (
                (min(current[0], int(n)), current[1]) if low else (current[0], max(current[1], int(n)))
            )

        return add

    return {
        "created": lambda i, labels, n: found.tally.add_created(family(labels), int(n)),
        "ended": lambda i, labels, n: found.tally.add_ended(family(labels), int(n)),
        "active": lambda i, labels, n: found.tally.add_active(i, family(labels), int(n)),
        "hpc_job": hpc_job,
        "labelled_gpus": gpus,
        "busiest_gpu": busiest,
        "families_per_gpu": families,
        "nodes_by_gpus": nodes,
        "node_at_rest_min": at_rest(low=True),
        "node_at_rest_max": at_rest(low=False),
        "up": scrape("up"),
        "scrape_duration": scrape("duration"),
        "scrape_duration_max": scrape("duration_max"),
    }


def _ask(
    pool: ThreadPoolExecutor, url: str, asked: dict[str, str], chunk: Window
) -> dict[str, list[dict[str, Any]]]:
    """Every query over one chunk, a few at a time; a failed query raises its error."""
    futures = {
        name: pool.submit(promql.query_range, url, query, chunk.time(1), chunk.end, chunk.step_s)
        for name, query in asked.items()
    }
    return {name: future.result() for name, future in futures.items()}


Ask = Callable[..., list[promql.Series]]


def _witness(ask: Ask, dcgm_job: str, window: Window) -> str:
    """The family whose sample times stand for their GPU's scrape: DCGM_FI_DEV_GPU_UTIL when the
    exporter sends it (it is in dcgm-exporter's default set), else the first GPU family it sends."""
    answer = ask(f'count by (__name__) ({{job="{dcgm_job}", gpu!=""}})', at=window.end)
    names = sorted(s.labels.get("__name__", "") for s in answer)
    if not names or WITNESS in names:
        return WITNESS
    return names[0]


def _series_estimate(ask: Ask) -> int:
    """Series a selector over everything may touch: the TSDB head's count, a safe upper estimate."""
    head = ask("max(prometheus_tsdb_head_series)")
    if head:
        return max(1, int(head[0].value))
    every = ask('count({job!=""})')
    return max(1, int(every[0].value)) if every else 1


def _tsdb_head(ask: Ask, window: Window) -> dict[str, float]:
    """Prometheus' own head counters over the window (TSDB-level, not the turnover; see the report),
    and its restarts, from its self-scrape (absent when Prometheus does not scrape itself)."""
    head = {}
    span = f"[{int(window.duration_s)}s]"
    asked = {
        "created": f"sum(increase(prometheus_tsdb_head_series_created_total{span}))",
        "removed": f"sum(increase(prometheus_tsdb_head_series_removed_total{span}))",
        "restarts": f'sum(changes(process_start_time_seconds{{job="prometheus"}}{span}))',
    }
    for name, query in asked.items():
        answer = ask(query, at=window.end)
        if answer:
            head[name] = answer[0].value
    return head


def sacct_from_lab(controller: Container, window: Window, lag_s: float) -> tuple[str, str]:
    """sacct's lines for the window (widened by the lag and a margin), and the command that made them."""
    start = iso(window.start - lag_s - SACCT_MARGIN_S).rstrip("Z")
    end = iso(window.end + SACCT_MARGIN_S).rstrip("Z")
    argv = sacct_argv(start, end)
    result = controller.exec_run(argv, environment={"SLURM_TIME_FORMAT": "%s", "TZ": "UTC"}, demux=True)
    stdout, stderr = result.output
    text = (stdout or b"").decode(errors="replace")
    if result.exit_code != 0:
        problem = (stderr or b"").decode(errors="replace").strip() or text.strip()
        raise ChurnError(f"`{' '.join(argv)}` on the controller failed (exit {result.exit_code}): {problem}")
    return text, "SLURM_TIME_FORMAT=%s TZ=UTC " + " ".join(argv)
