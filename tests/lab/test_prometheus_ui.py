"""Prometheus' own web UI on the running default lab, as a person meets it: its pages are the React UI
(not Debian's "no React UI" page), the graph page run with a query shows its result table, and the
alerts page shows the alerting rules Prometheus has loaded, with their states. Headless Chromium
(Debian's package) loads each page once and its DOM is polled until the result shows; each page is
also written as a screenshot under the test's directory (docs/img/ holds two of them)."""

from __future__ import annotations

import json
import os
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.blueprint.slurm_blueprint import Blueprint

from .browser import Browser
from .conftest import wait_for

pytestmark = pytest.mark.lab

PROMETHEUS = "http://127.0.0.1:9090"
DEBIAN_NO_UI = "does not include the modern React web UI"  # Debian's /usr/share/prometheus/web/no-ui
REACT_TITLE = "<title>Prometheus Time Series Collection and Processing Server</title>"  # react-app/public
PAGE_TIMEOUT_S = 60  # a 2-core machine beside a running lab: the UI's bundle and one API query


def get(path: str) -> tuple[str, str]:
    """The final URL (redirects followed) and body of a GET."""
    with urllib.request.urlopen(PROMETHEUS + path, timeout=10) as response:
        return response.geturl(), response.read().decode()


def api(path: str) -> Any:
    return json.loads(get(path)[1])["data"]


@pytest.fixture
def browser() -> Iterator[Browser]:
    opened = Browser()
    yield opened
    opened.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where the screenshots go: $LAB_SCREENSHOTS (to refresh docs/img/), else the test's directory."""
    return Path(os.environ.get("LAB_SCREENSHOTS", tmp_path))


def test_the_ui_pages_are_the_react_ui_not_debians_page(default_lab: Blueprint) -> None:
    _, root = get("/")  # Debian's Prometheus sends `/` to /classic/graph, with or without the React UI
    assert DEBIAN_NO_UI not in root
    for page in ("/graph", "/alerts"):  # Debian's "no React UI" page until static/react exists
        _, body = get(page)
        assert DEBIAN_NO_UI not in body and REACT_TITLE in body and '<div id="root">' in body, page


def test_the_graph_page_shows_the_querys_result(
    default_lab: Blueprint, browser: Browser, shots: Path
) -> None:
    series = api("/api/v1/query?query=up")["result"]
    assert series, "Prometheus has no `up` series to show"
    expected = [f'instance="{s["metric"]["instance"]}", job="{s["metric"]["job"]}"' for s in series]
    browser.open(f"{PROMETHEUS}/graph?g0.expr=up&g0.tab=1&g0.range_input=1h")

    def shown() -> str:
        text = browser.text()
        return text if f"Result series: {len(series)}" in text and all(e in text for e in expected) else ""

    text = str(wait_for(shown, PAGE_TIMEOUT_S, f"the graph page to list {expected}"))
    assert "Error" not in text.split("Result series")[1]
    browser.screenshot(shots / "prometheus-graph.png")


def test_the_alerts_page_shows_the_loaded_alerting_rules(
    default_lab: Blueprint, browser: Browser, shots: Path
) -> None:
    browser.open(f"{PROMETHEUS}/alerts")
    wanted: list[str] = []

    def shown() -> str:
        # Read again each time: a rule may change state between two polls. The page's filter boxes
        # count the rules by state, a row per file > group, then its rules.
        groups = api("/api/v1/rules?type=alert")["groups"]
        rules = [rule for group in groups for rule in group["rules"]]
        states = Counter(rule["state"] for rule in rules)
        counts = [f"{state.capitalize()} ({states[state]})" for state in ("inactive", "pending", "firing")]
        headings = [f"{group['file']} > {group['name']}" for group in groups]  # the page's group rows
        wanted[:] = counts + headings + [rule["name"] for rule in rules]
        text = browser.text()
        return text if all(item in text for item in wanted) else ""

    wait_for(shown, PAGE_TIMEOUT_S, "the alerts page to show the rules of /api/v1/rules and their states")
    assert wanted, "the page was never compared with /api/v1/rules"
    browser.screenshot(shots / "prometheus-alerts.png")
