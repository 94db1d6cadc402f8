"""Telemetry answers: sums over rows, one value per combination of the groupBy fields."""

from __future__ import annotations

from lab.runai.api.telemetry import Row, number, response


def test_values_are_strings_without_a_needless_fraction() -> None:
    assert (number(8.0), number(0.5), number(1e12)) == ("8", "0.5", "1000000000000")


def test_rows_sum_per_group_and_without_groups_to_one_value() -> None:
    rows = [
        Row({"Nodepool": ("default", "default")}, {"TOTAL_GPUS": 8.0}),
        Row({"Nodepool": ("default", "default")}, {"TOTAL_GPUS": 8.0}),
        Row({"Nodepool": ("inference", "inference")}, {"TOTAL_GPUS": 8.0}),
        Row({"Nodepool": ("inference", "inference")}, {}),  # a row without the type counts nothing
    ]
    grouped = response("TOTAL_GPUS", 0.0, rows, ["Nodepool"])
    assert grouped == {
        "type": "TOTAL_GPUS",
        "timestamp": "1970-01-01T00:00:00.000Z",
        "values": [
            {"value": "16", "groups": [{"key": "Nodepool", "value": "default", "name": "default"}]},
            {"value": "8", "groups": [{"key": "Nodepool", "value": "inference", "name": "inference"}]},
        ],
    }
    assert response("TOTAL_GPUS", 0.0, rows, [])["values"] == [{"value": "24"}]
    assert response("TOTAL_GPUS", 0.0, [], [])["values"] == [{"value": "0"}]
