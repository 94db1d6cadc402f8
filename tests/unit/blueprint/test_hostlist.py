import pytest

from lab.blueprint import hostlist


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("dgx-001", ["dgx-001"]),
        ("dgx-[001-003]", ["dgx-001", "dgx-002", "dgx-003"]),
        ("dgx-[001,003-004]", ["dgx-001", "dgx-003", "dgx-004"]),
        ("a,b-[1-2]", ["a", "b-1", "b-2"]),
        ("rack[01-02]x", ["rack01x", "rack02x"]),
    ],
)
def test_expand_reads_the_slurm_forms(expression: str, names: list[str]) -> None:
    assert hostlist.expand(expression) == names


@pytest.mark.parametrize(
    "expression", ["dgx-[003-001]", "dgx-[001-", "dgx-[1-2][3-4]", "dgx-[a-b]", "a,,b", "dgx-[1-]"]
)
def test_expand_rejects_what_slurm_would_not_read(expression: str) -> None:
    with pytest.raises(hostlist.HostlistError):
        hostlist.expand(expression)


@pytest.mark.parametrize(
    "names",
    [
        ["dgx-001", "dgx-002", "dgx-003"],
        ["dgx-001", "dgx-003", "dgx-004", "dgx-010"],
        ["dgx-0001"],
        [f"dgx-{i:03d}" for i in range(1, 257)],
    ],
)
def test_compress_round_trips(names: list[str]) -> None:
    assert hostlist.expand(hostlist.compress(names)) == names


def test_compress_writes_ranges() -> None:
    assert hostlist.compress(["dgx-001", "dgx-002", "dgx-004"]) == "dgx-[001-002,004]"


def test_a_list_longer_than_any_lab_is_refused_before_it_is_built() -> None:
    assert len(hostlist.expand(f"dgx-[0001-{hostlist.MAX_NAMES:04d}]")) == hostlist.MAX_NAMES
    with pytest.raises(hostlist.HostlistError, match="names more than 1024 nodes"):
        hostlist.expand("dgx-[001-999999999]")  # would build a billion names first
    with pytest.raises(hostlist.HostlistError, match="names more than 1024 nodes"):
        hostlist.expand("a-[0001-1000],b-[01-30]")  # the limit holds across items
