"""KAI resource division: quota first, the rest by over-quota weight, limits respected."""

from __future__ import annotations

from lab.runai.fairshare import UNLIMITED, QueueShare, divide


def test_quota_first_then_weights() -> None:
    shares = divide(
        48,
        [
            QueueShare("a", 24, 2, UNLIMITED, 100),
            QueueShare("b", 16, 1, UNLIMITED, 100),
            QueueShare("c", 8, 1, UNLIMITED, 0),
        ],
    )
    # a, b get their quotas (24, 16); c asks nothing; the 8 left split 2:1 -> 5 (floor 5.33) + 2, +1 leftover.
    assert shares["c"] == 0
    assert shares["a"] + shares["b"] == 48
    assert shares["a"] > 24 + 8 * 0.5 and shares["b"] >= 16 + 2


def test_queue_asking_less_than_quota_gets_what_it_asks() -> None:
    shares = divide(10, [QueueShare("a", 8, 1, UNLIMITED, 3), QueueShare("b", 2, 1, UNLIMITED, 20)])
    assert shares == {"a": 3, "b": 7}


def test_limit_caps_the_over_quota_share() -> None:
    shares = divide(32, [QueueShare("a", 4, 1, 6, 40), QueueShare("b", 4, 1, UNLIMITED, 40)])
    assert shares["a"] == 6
    assert shares["b"] == 26


def test_zero_weight_never_goes_over_quota() -> None:
    shares = divide(32, [QueueShare("a", 4, 0, UNLIMITED, 40), QueueShare("b", 4, 1, UNLIMITED, 40)])
    assert shares["a"] == 4
    assert shares["b"] == 28


def test_lone_queue_receives_everything_left() -> None:
    # divideUpToFairShare gives a single queue all remaining resources, even beyond its request.
    assert divide(16, [QueueShare("a", 4, 1, UNLIMITED, 6)]) == {"a": 16}
