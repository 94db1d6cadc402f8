"""Query parameters of the Run:ai API: each bad input gets 400 and a message naming the parameter."""

from __future__ import annotations

import pytest

from lab.runai.api import params, reference
from lab.runai.api.params import ApiError


def test_a_time_range_reads_start_end_and_the_default_number_of_samples() -> None:
    window = params.time_range({"start": ["2026-12-05T10:00:00Z"], "end": ["2026-12-05T11:00:00+00:00"]})
    assert (window.end - window.start, window.samples) == (3600.0, 20)


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"end": ["2026-12-05T11:00:00Z"]}, "missing required parameter start"),
        ({"start": ["2026-12-05T12:00:00Z"], "end": ["2026-12-05T11:00:00Z"]}, "is after end"),
        ({"start": ["yesterday"], "end": ["2026-12-05T11:00:00Z"]}, "not an ISO 8601"),
        ({"start": ["2026-12-05T10:00:00"], "end": ["2026-12-05T11:00:00Z"]}, "has no time zone"),
        (
            {"start": ["2026-12-05T10:00:00Z"], "end": ["2026-12-05T11:00:00Z"], "numberOfSamples": ["1001"]},
            "numberOfSamples=1001 is out of range",
        ),
        (
            {"start": ["2026-12-05T10:00:00Z"], "end": ["2026-12-05T11:00:00Z"], "numberOfSamples": ["-1"]},
            "out of range",
        ),
        (
            {"start": ["2026-12-05T10:00:00Z"], "end": ["2026-12-05T11:00:00Z"], "numberOfSamples": ["ten"]},
            "not an integer",
        ),
        ({"start": ["2026-12-05T10:00:00Z", "2026-12-05T10:00:01Z"], "end": ["x"]}, "given 2 times"),
    ],
)
def test_a_bad_time_range_is_a_400_naming_the_parameter(query: params.Query, words: str) -> None:
    with pytest.raises(ApiError) as error:
        params.time_range(query)
    assert error.value.code == 400
    assert words in error.value.message


def test_metric_types_are_comma_separated_or_repeated_and_kept_once() -> None:
    query = {"metricType": ["TOTAL_GPU,ALLOCATED_GPU", "TOTAL_GPU"]}
    types = params.metric_types(query, reference.CLUSTER_METRIC_TYPES, reference.CLUSTER_METRICS_SERVED)
    assert types == ["TOTAL_GPU", "ALLOCATED_GPU"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("GPU_FLOPS", "is not one of the reference's values"),
        ("UNALLOCATED_GPU", "the lab does not compute it"),
        ("", "missing required parameter metricType"),
    ],
)
def test_an_unknown_or_unserved_metric_type_is_a_400(value: str, words: str) -> None:
    with pytest.raises(ApiError) as error:
        params.metric_types(
            {"metricType": [value]}, reference.CLUSTER_METRIC_TYPES, reference.CLUSTER_METRICS_SERVED
        )
    assert error.value.code == 400
    assert words in error.value.message
    assert error.value.body() == {"code": 400, "message": error.value.message, "details": error.value.details}


def test_group_by_takes_at_most_two_documented_fields() -> None:
    assert params.group_by({"groupBy": ["Nodepool,Node"]}, reference.NODE_GROUP_BY) == ["Nodepool", "Node"]
    with pytest.raises(ApiError, match="groupBy has 3"):
        params.group_by({"groupBy": ["ClusterId,Nodepool,Node"]}, reference.NODE_GROUP_BY)
    with pytest.raises(ApiError, match="not one of the reference's values"):
        params.group_by({"groupBy": ["Rack"]}, reference.NODE_GROUP_BY)


def test_telemetry_type_is_required_and_single() -> None:
    types = reference.WORKLOAD_TELEMETRY_TYPES
    assert params.telemetry_type({"telemetryType": ["GPU_ALLOCATION"]}, types, types) == "GPU_ALLOCATION"
    with pytest.raises(ApiError, match="missing required parameter telemetryType"):
        params.telemetry_type({}, types, types)
    with pytest.raises(ApiError, match="given 2 times"):
        params.telemetry_type({"telemetryType": ["WORKLOADS_COUNT", "GPU_ALLOCATION"]}, types, types)


def test_filter_terms_split_into_field_operator_and_value() -> None:
    terms = params.filters({"filterBy": ["allocatedGPU>=2,name=@train"]}, ("name", "allocatedGPU"))
    assert terms == [params.Filter("allocatedGPU", ">=", "2"), params.Filter("name", "=@", "train")]
    with pytest.raises(ApiError, match="is not 'field operator value'"):
        params.filters({"filterBy": ["colour==blue"]}, ("name",))


def test_dates_come_back_as_the_references_date_time() -> None:
    assert params.iso(params.iso_time("2026-12-05T10:00:00.250Z", "start")) == "2026-12-05T10:00:00.250Z"


def test_booleans_are_true_or_false() -> None:
    assert params.boolean({"deleted": ["true"]}, "deleted") is True
    with pytest.raises(ApiError, match="not a boolean"):
        params.boolean({"deleted": ["yes"]}, "deleted")
