"""The construct's exposition text: client_golang's order, and no sample the sourced table lacks."""

from __future__ import annotations

import re

import pytest

from lab.runai.expfmt import ExpositionError, Sample, labels, render


def test_families_sorted_by_name_series_by_label_values_labels_by_name() -> None:
    text = render(
        [
            ("runai_node_nodepool", labels({"nodepool": "default", "node": "dgx-002"}), 1.0),
            ("runai_node_nodepool", labels({"node": "dgx-001", "nodepool": "default"}), 1.0),
            ("runai_mig_mode_gpu_count", labels({"node": "dgx-001", "clusterId": "c"}), 0.5),
        ]
    )
    assert text == (
        "# HELP runai_mig_mode_gpu_count Number of GPUs on MIG nodes\n"
        "# TYPE runai_mig_mode_gpu_count gauge\n"
        'runai_mig_mode_gpu_count{clusterId="c",node="dgx-001"} 0.5\n'
        "# HELP runai_node_nodepool the node's nodepool\n"
        "# TYPE runai_node_nodepool gauge\n"
        'runai_node_nodepool{node="dgx-001",nodepool="default"} 1\n'
        'runai_node_nodepool{node="dgx-002",nodepool="default"} 1\n'
    )


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        (("runai_gpu_utilisation_per_gpu", (), 1.0), "'runai_gpu_utilisation_per_gpu' is not in"),
        (
            ("runai_node_nodepool", labels({"node": "dgx-001", "nodepool": "default", "pod": "p"}), 1.0),
            "runai_node_nodepool: labels ['pod'] are not sourced for runai_node_nodepool",
        ),
        (
            ("runai_node_nodepool", labels({"node": "dgx-001"}), 1.0),
            "runai_node_nodepool: documented labels ['nodepool'] are missing",
        ),
    ],
)
def test_a_sample_the_sourced_table_does_not_hold_raises(sample: Sample, message: str) -> None:
    with pytest.raises(ExpositionError, match=re.escape(message)):
        render([sample])
