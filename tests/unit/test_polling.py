from itertools import islice

from lab import polling


def test_the_looks_thin_out_to_the_longest_pause() -> None:
    assert list(islice(polling.pauses(0.5), 6)) == [0.5, 0.75, 1.125, 1.6875, 2.0, 2.0]


def test_a_wait_that_asks_for_long_pauses_keeps_them() -> None:
    assert list(islice(polling.pauses(5), 3)) == [5, 5, 5]
