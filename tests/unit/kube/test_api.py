"""The client's paged lists and watches against a fake API server on loopback."""

from __future__ import annotations

import pytest

from lab.kube.api import ApiError, Client
from tests.unit.loopback import serving

from .fake_apiserver import FakeApi, FakeApiServer, bookmark, event, pod


def test_a_paged_list_follows_continue_tokens_and_returns_the_lists_version() -> None:
    api = FakeApi(pods=[pod(f"p{i}", 3) for i in range(5)], version=7)
    with serving(FakeApiServer(api)) as url:
        items, version = Client.plain(url).list_paged("Pod", limit=2, labelSelector="kai.scheduler/queue")
    assert [p["metadata"]["name"] for p in items] == ["p0", "p1", "p2", "p3", "p4"]
    assert version == "7"
    assert [r.get("continue") for r in api.requests] == [None, "2", "4"]
    assert {(r["limit"], r["labelSelector"]) for r in api.requests} == {("2", "kai.scheduler/queue")}


def test_an_expired_continue_token_is_an_api_error_410() -> None:
    api = FakeApi(pods=[pod(f"p{i}", 3) for i in range(3)], expired_tokens={"2"})
    with serving(FakeApiServer(api)) as url, pytest.raises(ApiError) as raised:
        Client.plain(url).list_paged("Pod", limit=2)
    assert raised.value.status == 410


def test_a_watch_yields_every_event_from_its_version_with_bookmarks_asked_for() -> None:
    events = [event("ADDED", pod("a", 8)), bookmark(9), event("DELETED", pod("a", 10))]
    api = FakeApi(watches={"7": events})
    with serving(FakeApiServer(api)) as url:
        seen = list(Client.plain(url).watch("Pod", resource_version="7", timeout_s=30, labelSelector="x"))
    assert seen == events
    (query,) = api.requests
    assert query == {
        "watch": "1",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "30",
        "resourceVersion": "7",
        "labelSelector": "x",
    }


def test_a_watch_from_an_expired_version_is_an_api_error_410() -> None:
    with serving(FakeApiServer(FakeApi(expired={"3"}))) as url, pytest.raises(ApiError) as raised:
        list(Client.plain(url).watch("Pod", resource_version="3"))
    assert raised.value.status == 410
