"""The ADD_METRIC* parser on small C texts written here in the three macro shapes openmetrics.c uses
(plain, labelled, name built from a prefix a caller sets), its errors, its command line, and the
committed JSON beside it: complete, unique, and what signals/slurm-native.md tables."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab.paths import PROJECT_ROOT
from lab.slurm_native import source_families
from lab.slurm_native.source_families import (
    ENDPOINTS,
    NativeFamily,
    SourceError,
    families_from_source,
    git_blob_sha,
    read_families,
)

FAMILIES_JSON = source_families.PINNED_FAMILIES
SIGNALS = PROJECT_ROOT / "signals" / "slurm-native.md"

# The macros and the registering function, in the shapes of the tag (parameter names of the macros are
# this file's own: the parser reads them from the #define lines).
PREAMBLE = r"""
#define ADD_METRIC_KEYVAL_PFX(s, t, d, p, n, h, o, k, v) \
    register_kv(s, DATA_PARSER_##t, (void *) &(d), sizeof(d), p, \
            XSTRINGIFY(n), h, METRIC_TYPE_##o, k, v)
#define ADD_METRIC_KEYVAL(s, t, d, n, h, o, k, v) \
    register_kv(s, DATA_PARSER_##t, (void *) &(d), sizeof(d), NULL, \
            "slurm_" XSTRINGIFY(n), h, METRIC_TYPE_##o, k, v)
#define ADD_METRIC(s, t, d, n, h, o) \
    register_kv(s, DATA_PARSER_##t, (void *) &(d), sizeof(d), NULL, \
            "slurm_" XSTRINGIFY(n), h, METRIC_TYPE_##o, NULL, NULL)

static void register_kv(set_t *set, int type, void *data, ssize_t size, char *pfx,
            char *name, char *desc, int otype, char *key, char *val)
{
    char *full = NULL;

    if (pfx) {
        xstrfmtcat(full, "slurm_%s_%s", pfx, name);
        name = full;
    }
    store(set, name, desc, key, val); /* ADD_METRIC(x) in a comment is no call */
}
"""


def _families(body: str) -> list[NativeFamily]:
    return families_from_source(PREAMBLE + body)


def test_plain_shape_is_slurm_and_the_name_without_a_label() -> None:
    text = """
extern set_t *metrics_p_parse_jobs_metrics(stats_t *stats)
{
    set_t *set = new_set();

    ADD_METRIC(set, UINT32, stats->pending, jobs_pending, "Pending " "jobs", GAUGE);
    ADD_METRIC(set, UINT32, stats->x, sched_exit_end , "Say \\"end\\"", GAUGE);
    return set;
}
"""
    found = _families(text)
    assert [(f.name, f.help, f.labels, f.endpoint, f.type) for f in found] == [
        ("slurm_jobs_pending", "Pending jobs", (), "/metrics/jobs", "gauge"),
        ("slurm_sched_exit_end", 'Say "end"', (), "/metrics/jobs", "gauge"),
    ]
    lines = (PREAMBLE + text).splitlines()
    assert all("ADD_METRIC(set" in lines[f.line - 1] for f in found), "line is the call's, 1-based"


def test_labelled_shape_in_a_function_handed_over_as_a_callback() -> None:
    text = """
static int _part_to_metric(void *x, void *arg)
{
    part_t *ps = x;
    set_t *set = arg;

    ADD_METRIC_KEYVAL(set, UINT16, ps->idle, partition_nodes_idle, "Idle", GAUGE, "partition", ps->name);
    return 0;
}

extern set_t *metrics_p_parse_parts_metrics(parts_t *stats)
{
    set_t *set = new_set();
    uint32_t count = list_count(stats->parts);

    ADD_METRIC(set, UINT32, count, partitions, "Partitions", GAUGE);
    list_for_each_ro(stats->parts, _part_to_metric, set);
    return set;
}
"""
    found = _families(text)
    assert [(f.name, f.labels, f.endpoint) for f in found] == [
        ("slurm_partitions", (), "/metrics/partitions"),
        ("slurm_partition_nodes_idle", ("partition",), "/metrics/partitions"),
    ]


def test_built_name_is_one_family_per_hand_over_with_the_fields_the_caller_set() -> None:
    text = """
static int _ua_to_metric(void *x, void *arg)
{
    ua_t *ua = x;
    set_t *set = ((args_t *) arg)->set;
    char *key = ((args_t *) arg)->str;
    char *pfx = ((args_t *) arg)->pfx;

    ADD_METRIC_KEYVAL_PFX(set, UINT32, ua->s->pending, pfx, jobs_pending, "Pending", GAUGE, key, ua->name);
    ADD_METRIC_KEYVAL_PFX(set, UINT32, ua->s->job_cnt, pfx, jobs, "Jobs", GAUGE, key, ua->name);
    return 0;
}

extern set_t *metrics_p_parse_ua_metrics(ua_stats_t *stats)
{
    set_t *set = new_set();
    args_t args;

    args.set = set;
    args.pfx = "user";
    args.str = "username";
    list_for_each_ro(stats->users, _ua_to_metric, &args);
    args.pfx = "account";
    args.str = "account";
    list_for_each_ro(stats->accounts, _ua_to_metric, &args);
    return set;
}
"""
    found = _families(text)
    assert [(f.name, f.labels) for f in found] == [
        ("slurm_user_jobs_pending", ("username",)),
        ("slurm_user_jobs", ("username",)),
        ("slurm_account_jobs_pending", ("account",)),
        ("slurm_account_jobs", ("account",)),
    ]
    assert {f.endpoint for f in found} == {"/metrics/jobs-users-accts"}
    assert found[0].line == found[2].line, "both families of one call carry its line"


def test_a_call_no_entry_point_reaches_is_an_error_naming_its_line() -> None:
    text = """
static void _orphan(set_t *set, stats_t *stats)
{
    ADD_METRIC(set, UINT32, stats->x, orphan, "Nobody serves me", GAUGE);
}
"""
    with pytest.raises(SourceError, match=r"line \d+ in _orphan.*ENDPOINTS"):
        _families(text)


def test_a_text_without_calls_is_an_error_saying_which_file_to_pass() -> None:
    with pytest.raises(SourceError, match=r"no ADD_METRIC\* call found\. Fix: pass Slurm's src/plugins"):
        families_from_source("int main(void) { return 0; }\n")


def test_a_prefix_nobody_sets_is_an_error() -> None:
    text = """
extern set_t *metrics_p_parse_ua_metrics(ua_stats_t *stats)
{
    char *pfx = stats->pfx;

    ADD_METRIC_KEYVAL_PFX(set, UINT32, stats->x, pfx, jobs, "Jobs", GAUGE, "user", stats->name);
}
"""
    with pytest.raises(SourceError, match=r"cannot resolve 'pfx'"):
        _families(text)


def test_the_blob_sha_is_gits() -> None:
    assert git_blob_sha(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert git_blob_sha(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lab.slurm_native.source_families", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_the_command_writes_the_document(tmp_path: Path) -> None:
    source = tmp_path / "openmetrics.c"
    source.write_text(
        PREAMBLE + "extern void metrics_p_parse_nodes_metrics(void)\n{\n"
        '\tADD_METRIC(set, UINT16, n, nodes, "Nodes", GAUGE);\n}\n'
    )
    result = _run(str(source), "--tag", "slurm-99-99-9-1", "--commit", COMMIT)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["source"] == {
        "repository": "SchedMD/slurm",
        "tag": "slurm-99-99-9-1",
        "commit": COMMIT,
        "path": "src/plugins/metrics/openmetrics/openmetrics.c",
        "blob_sha": git_blob_sha(source.read_bytes()),
    }
    assert [f["name"] for f in doc["families"]] == ["slurm_nodes"]


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        (
            None,
            r"^\S+openmetrics\.c: no such file\. Fix: write the tag's file there first, git -C MIRROR show",
        ),
        ("int x;\n", r"^\S+openmetrics\.c: no ADD_METRIC\* call found\. Fix: "),
    ],
    ids=["missing file", "no call"],
)
def test_the_command_fails_with_one_line_naming_the_file_and_the_fix(
    tmp_path: Path, write: str | None, expected: str
) -> None:
    source = tmp_path / "openmetrics.c"
    if write is not None:
        source.write_text(write)
    result = _run(str(source), "--tag", "t", "--commit", COMMIT)
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert re.match(expected, result.stderr.strip())


# The committed document.

DOC = json.loads(FAMILIES_JSON.read_text(encoding="utf-8"))
FAMILIES = read_families(FAMILIES_JSON)


def test_the_document_names_its_source_completely() -> None:
    source = DOC["source"]
    assert set(source) == {"repository", "tag", "commit", "path", "blob_sha"}
    assert source["repository"] == "SchedMD/slurm"
    assert source["path"] == source_families.SOURCE_PATH
    assert re.fullmatch(r"slurm-\d\d-\d\d-\d+-\d+", source["tag"])
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert re.fullmatch(r"[0-9a-f]{40}", source["blob_sha"])


def test_the_document_has_unique_names_each_with_help_endpoint_and_line() -> None:
    assert len(FAMILIES) > 200, "an empty document must not pass"
    names = [f.name for f in FAMILIES]
    assert len(names) == len(set(names))
    for family in FAMILIES:
        assert family.name.startswith("slurm_") and family.help.strip(), family
        assert family.endpoint in ENDPOINTS.values() and family.line > 0 and family.type == "gauge", family
    assert {f.endpoint for f in FAMILIES} == set(ENDPOINTS.values())


def _documented_by_endpoint(text: str) -> dict[str, dict[str, tuple[str, ...]]]:
    """``### `/metrics/x` (n)`` sections of signals/slurm-native.md → family → labels, from their tables."""
    tables: dict[str, dict[str, tuple[str, ...]]] = {}
    current: str | None = None
    for line in text.splitlines():
        if heading := re.match(r"^### `(/metrics/[a-z-]+)`", line):
            current = heading[1]
            tables[current] = {}
        elif line.startswith("## "):
            current = None
        elif current and (row := re.match(r"^\| `(slurm_\w+)` \| ([^|]+) \|", line)):
            tables[current][row[1]] = tuple(re.findall(r"`(\w+)`", row[2]))
    return tables


def test_the_signals_doc_tables_every_family_of_the_document_under_its_endpoint() -> None:
    documented = _documented_by_endpoint(SIGNALS.read_text(encoding="utf-8"))
    expected: dict[str, dict[str, tuple[str, ...]]] = {}
    for family in FAMILIES:
        expected.setdefault(family.endpoint, {})[family.name] = family.labels
    assert documented == expected
