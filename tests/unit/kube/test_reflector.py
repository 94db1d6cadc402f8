"""A reflector lists once, then follows watches from the list's version, and lists again only when
that version expired; against a fake API server on loopback."""

from __future__ import annotations

from lab.kube.api import Client, wait_until
from lab.kube.reflector import Reflector
from tests.unit.loopback import serving

from .fake_apiserver import FakeApi, FakeApiServer, bookmark, event, gone, pod


def names(reflector: Reflector) -> list[str]:
    return sorted(p["metadata"]["name"] for p in reflector.items())


def test_it_lists_in_pages_then_applies_added_modified_deleted_and_bookmarks() -> None:
    api = FakeApi(pods=[pod("a", 2), pod("b", 3), pod("c", 4)], version=5)
    api.watches["5"] = [
        event("ADDED", pod("d", 6)),
        event("MODIFIED", pod("a", 7, "Running")),
        event("DELETED", pod("b", 8)),
        bookmark(20),
    ]
    with serving(FakeApiServer(api)) as url:
        reflector = Reflector(Client.plain(url), "Pod", label_selector="kai.scheduler/queue", page_limit=2)
        reflector.step()
        assert (names(reflector), reflector.resource_version, reflector.synced.is_set()) == (
            ["a", "b", "c"],
            "5",
            True,
        )
        reflector.step()
    assert names(reflector) == ["a", "c", "d"]
    running = next(p for p in reflector.items() if p["metadata"]["name"] == "a")
    assert running["status"]["phase"] == "Running"
    assert reflector.resource_version == "20"  # the bookmark's: the next watch starts there
    assert reflector.lists == 1
    assert all(r["labelSelector"] == "kai.scheduler/queue" for r in api.requests)


def test_a_watch_that_ends_is_followed_by_the_next_from_the_last_version() -> None:
    api = FakeApi(pods=[pod("a", 2)], version=5)
    api.watches["5"] = [event("ADDED", pod("b", 6))]
    api.watches["6"] = [event("ADDED", pod("c", 9))]
    with serving(FakeApiServer(api)) as url:
        reflector = Reflector(Client.plain(url), "Pod")
        for _ in range(3):
            reflector.step()
    assert names(reflector) == ["a", "b", "c"]
    assert [r.get("resourceVersion") for r in api.requests] == [None, "5", "6"]
    assert reflector.lists == 1


def test_an_expired_version_in_the_stream_makes_it_list_again() -> None:
    api = FakeApi(pods=[pod("a", 2)], version=5)
    api.watches["5"] = [gone(5)]
    with serving(FakeApiServer(api)) as url:
        reflector = Reflector(Client.plain(url), "Pod")
        reflector.step()
        reflector.step()  # the watch says 410: the version is dropped
        assert reflector.resource_version == ""
        api.pods, api.version = [pod("b", 30)], 31  # "a" went while nobody watched
        reflector.step()
    assert (names(reflector), reflector.resource_version, reflector.lists) == (["b"], "31", 2)


def test_a_watch_refused_with_410_gone_makes_it_list_again() -> None:
    api = FakeApi(pods=[pod("a", 2)], version=5, expired={"5"})
    with serving(FakeApiServer(api)) as url:
        reflector = Reflector(Client.plain(url), "Pod")
        for _ in range(3):
            reflector.step()
    assert reflector.lists == 2
    assert [bool(r.get("watch")) for r in api.requests] == [False, True, False]


def test_changes_are_what_was_added_or_changed_since_the_last_look() -> None:
    api = FakeApi(pods=[pod("a", 2), pod("b", 3)], version=5)
    api.watches["5"] = [event("MODIFIED", pod("a", 6, "Running")), gone(6)]
    with serving(FakeApiServer(api)) as url:
        reflector = Reflector(Client.plain(url), "Pod", keep_changes=True)
        reflector.step()
        assert [p["metadata"]["name"] for p in reflector.changes()] == ["a", "b"]
        assert reflector.changes() == []
        reflector.step()  # a's change, then 410: the version is dropped
        assert [p["metadata"]["resourceVersion"] for p in reflector.changes()] == ["6"]
        api.pods, api.version = [pod("a", 6, "Running"), pod("b", 3), pod("c", 7)], 8
        reflector.step()  # the new list: only "c" is new to it
    assert [p["metadata"]["name"] for p in reflector.changes()] == ["c"]


def test_started_it_is_synced_on_its_own_thread() -> None:
    api = FakeApi(pods=[pod("a", 2)], version=5)
    with serving(FakeApiServer(api)) as url:
        reflector = Reflector(Client.plain(url), "Pod", watch_timeout_s=1)
        reflector.start()
        try:
            wait_until(reflector.synced.is_set, 10, "the first list")
            assert names(reflector) == ["a"]
        finally:
            reflector.stop()
