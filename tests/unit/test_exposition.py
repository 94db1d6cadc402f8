from pathlib import Path

import pytest

from lab import exposition

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dcgm-exporter-4.5.3-4.8.2"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.prom")) or [None], ids=str)
def test_real_dcgm_exporter_scrapes_parse(path: Path | None) -> None:
    assert path is not None, f"no captured scrape in {FIXTURES}: an empty glob must not pass"
    families = exposition.parse(path.read_text())
    assert families, path
    for family in families.values():
        assert family.samples, f"{family.name} has HELP/TYPE but no sample in {path.name}"
    util = families["DCGM_FI_DEV_GPU_UTIL"]
    assert util.type == "gauge"
    assert {"gpu", "UUID", "modelName"} <= set(util.samples[0].labels)


def test_labels_values_and_escapes() -> None:
    text = (
        '# HELP m A help text.\n# TYPE m gauge\nm{a="x",b="q\\"uote\\\\n",c="comma, inside"} 1.5e+03\nm 7\n'
    )
    family = exposition.parse(text)["m"]
    assert family.help == "A help text."
    assert family.samples[0].labels == {"a": "x", "b": 'q"uote\\n', "c": "comma, inside"}
    assert family.samples[0].value == 1500.0
    assert family.samples[1].labels == {}


def test_histogram_series_join_their_family() -> None:
    text = '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 3\nh_sum 4.5\nh_count 3\n'
    families = exposition.parse(text)
    assert list(families) == ["h"]
    assert [s.name for s in families["h"].samples] == ["h_bucket", "h_bucket", "h_sum", "h_count"]


@pytest.mark.parametrize("line", ["m{a=x} 1", 'm{a="x"} one', '{a="x"} 1', 'm{a="x" 1'])
def test_bad_lines_are_named(line: str) -> None:
    with pytest.raises(exposition.ExpositionError, match="line 1"):
        exposition.parse(line + "\n")
