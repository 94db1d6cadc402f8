from lab import exposition
from lab.capture import families, signals
from lab.capture.diff import diff

SCRAPE_1 = """# HELP up_gpus GPUs.
# TYPE up_gpus gauge
up_gpus{node="a",hpc_job="1"} 1
up_gpus{node="b"} 1
"""
SCRAPE_2 = """# TYPE up_gpus gauge
up_gpus{node="a",hpc_job="2"} 1
"""

SIGNALS = """# Something

| family | type | labels | emitted | source |
|---|---|---|---|---|
| `up_gpus` | gauge | `node`, `hpc_job` | always | here |
| `rare_total` | counter | – | when: a rare thing happens | here |
| `always_total` | counter | – | always | here |

| label | meaning |
|---|---|
| `Hostname` | the node |
"""


def test_inventory_counts_distinct_values_and_series_over_all_scrapes() -> None:
    found = families.build([exposition.parse(SCRAPE_1), exposition.parse(SCRAPE_2)])
    entry = found["up_gpus"]
    assert entry["type"] == "gauge"
    assert entry["series"] == 3
    assert entry["labels"]["hpc_job"] == {"distinct": 2, "examples": ["1", "2"]}
    assert entry["labels"]["node"]["distinct"] == 2
    assert "`hpc_job` (2)" in families.markdown(found)


def test_signals_tables_are_read() -> None:
    documented = signals.parse(SIGNALS)
    assert documented.families["up_gpus"].labels == {"node", "hpc_job"}
    assert documented.families["rare_total"].condition == "a rare thing happens"
    assert documented.families["always_total"].condition is None
    assert documented.common_labels == {"Hostname"}


def test_diff_reports_every_kind_of_problem() -> None:
    found = families.build(
        [exposition.parse(SCRAPE_1 + 'new_thing{x="1"} 1\nup_gpus{node="a",extra="y"} 1\n')]
    )
    found["up_gpus"]["type"] = "counter"
    problems = {(p.kind, p.family) for p in diff(found, signals.parse(SIGNALS), "signals/x.md")}
    assert problems == {
        ("undocumented-family", "new_thing"),
        ("undocumented-label", "up_gpus"),
        ("type-differs", "up_gpus"),
        ("never-seen", "always_total"),
    }


def test_a_matching_capture_is_clean() -> None:
    found = families.build([exposition.parse(SCRAPE_1 + "# TYPE always_total counter\nalways_total 3\n")])
    assert diff(found, signals.parse(SIGNALS), "signals/x.md") == []
