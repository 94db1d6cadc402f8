"""Slurm's own metric families, read from the ``ADD_METRIC*`` calls of its OpenMetrics plugin
(``src/plugins/metrics/openmetrics/openmetrics.c`` at a tag). Pure and stdlib-only.

The plugin registers every family through one of three macros, whose ``#define``s are read from the same
text (slurm-26-05-3-1, openmetrics.c:76-89); a call looks like

    ADD_METRIC(set, UINT32, part_cnt, partitions, "Total number of partitions", GAUGE);

Each macro expands to one call of a function of the file (``_metrics_create_kv``) whose parameters say
which macro argument is the prefix, name, HELP, type, label key and label value. The name is built as
the C builds it: ``"slurm_" XSTRINGIFY(name)`` is the literal joined to the argument's spelling, and a
prefix (``ADD_METRIC_KEYVAL_PFX``) goes through the format string that function passes to ``xstrfmtcat``
(``"slurm_%s_%s"``). A prefix or label key held in a variable is resolved from the fields the calling
function set to string literals before it handed the registering function on (``args.pfx = "user";
args.str = "username"; list_for_each_ro(stats->users, _ua_stats_to_metric, &args);``), once per hand-over,
so one such call is one family per hand-over. The endpoint is that of the plugin entry point the call is
reached from (:data:`ENDPOINTS`).

    git -C MIRROR show slurm-26-05-3-1:src/plugins/metrics/openmetrics/openmetrics.c > /tmp/openmetrics.c
    python -m lab.slurm_native.source_families /tmp/openmetrics.c --tag slurm-26-05-3-1 --commit SHA
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

SOURCE_PATH = "src/plugins/metrics/openmetrics/openmetrics.c"
REPOSITORY = "SchedMD/slurm"
# Plugin entry point -> the route that serves what it registers. http.c's http_init binds each route to a
# handler (slurm-26-05-3-1 src/slurmctld/http.c:574-583) that calls metrics_serialize_struct with a
# METRICS_CTLD_* type; src/interfaces/metrics.c:55-96 maps the type to metrics_g_parse_*, which calls the
# plugin's symbol of the same stem.
ENDPOINTS: dict[str, str] = {
    "metrics_p_parse_jobs_metrics": "/metrics/jobs",
    "metrics_p_parse_nodes_metrics": "/metrics/nodes",
    "metrics_p_parse_parts_metrics": "/metrics/partitions",
    "metrics_p_parse_sched_metrics": "/metrics/scheduler",
    "metrics_p_parse_ua_metrics": "/metrics/jobs-users-accts",
}
MACRO_PREFIX = "ADD_METRIC"
# The registering function's parameters that carry each part of a family.
_ROLES = ("pfx", "name", "desc", "key", "val")


class SourceError(ValueError):
    """The text is not an openmetrics.c this parser understands; the message says where and the fix."""


@dataclass(frozen=True)
class NativeFamily:
    name: str
    help: str
    labels: tuple[str, ...]
    endpoint: str  # one of ENDPOINTS' values
    line: int  # 1-based line of the ADD_METRIC* call in openmetrics.c
    type: str = "gauge"  # OpenMetrics type as the plugin prints it (openmetrics_type_str)


@dataclass(frozen=True)
class _Token:
    kind: str  # string, char, ident, number, punct
    text: str
    line: int


@dataclass(frozen=True)
class _Function:
    name: str
    params: tuple[str, ...]
    body: tuple[_Token, ...]


@dataclass(frozen=True)
class _Macro:
    name: str
    params: tuple[str, ...]
    target: str  # the function the macro calls
    args: tuple[tuple[_Token, ...], ...]  # its arguments, in terms of the macro's parameters


_SKIP = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
_TOKEN = re.compile(
    r'(?P<string>"(?:\\.|[^"\\\n])*")|(?P<char>\'(?:\\.|[^\'\\\n])*\')|(?P<ident>[A-Za-z_]\w*)'
    r"|(?P<number>\.?\d[\w.]*)|(?P<punct>->|##|\+\+|--|&&|\|\||[<>=!]=|<<|>>|\S)"
)
_DEFINE = re.compile(r"#\s*define\s+(\w+)\(([^)]*)\)(.*)", re.S)
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t"}


def _blank_comments(text: str) -> str:
    """Comments become spaces (newlines kept, so line numbers hold); string literals stay as they are."""
    return _SKIP.sub(lambda m: re.sub(r"[^\n]", " ", m[0]) if m[0].startswith("/") else m[0], text)


def _split_directives(text: str) -> tuple[str, list[str]]:
    """The text without preprocessor lines (blank lines in their place), and each directive joined."""
    lines = text.split("\n")
    directives: list[str] = []
    index = 0
    while index < len(lines):
        if lines[index].lstrip().startswith("#"):
            joined = []
            while True:
                joined.append(lines[index].rstrip().removesuffix("\\"))
                more = lines[index].rstrip().endswith("\\")
                lines[index] = ""
                index += 1
                if not more or index >= len(lines):
                    break
            directives.append(" ".join(joined))
        else:
            index += 1
    return "\n".join(lines), directives


def _tokens(text: str) -> list[_Token]:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    found = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "punct"
        found.append(_Token(kind, match[0], bisect.bisect_right(starts, match.start())))
    return found


def _matching(tokens: tuple[_Token, ...] | list[_Token], open_at: int) -> int:
    """Index of the bracket closing the one at ``open_at``."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    closing = pairs[tokens[open_at].text]
    depth = 0
    for index in range(open_at, len(tokens)):
        if tokens[index].text == tokens[open_at].text:
            depth += 1
        elif tokens[index].text == closing:
            depth -= 1
            if depth == 0:
                return index
    raise SourceError(f"line {tokens[open_at].line}: unbalanced {tokens[open_at].text!r}")


def _arguments(tokens: tuple[_Token, ...] | list[_Token], open_at: int) -> tuple[list[list[_Token]], int]:
    """The comma-separated arguments inside the parentheses at ``open_at``, and the closing index."""
    close = _matching(tokens, open_at)
    args: list[list[_Token]] = [[]]
    depth = 0
    for token in tokens[open_at + 1 : close]:
        if token.text in "([{" and token.kind == "punct":
            depth += 1
        elif token.text in ")]}" and token.kind == "punct":
            depth -= 1
        if token.text == "," and depth == 0:
            args.append([])
        else:
            args[-1].append(token)
    return ([] if args == [[]] else args), close


def _functions(tokens: list[_Token]) -> dict[str, _Function]:
    """Function definitions at file scope: the last identifier before a top-level ``(`` names the body
    that follows; braces after an ``=`` or a ``struct`` have no such name and are skipped."""
    found: dict[str, _Function] = {}
    candidate: tuple[str, int] | None = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.text == "(" and index and tokens[index - 1].kind == "ident":
            candidate = (tokens[index - 1].text, index)
            index = _matching(tokens, index) + 1
            continue
        if token.text in (";", "="):
            candidate = None
        elif token.text == "{":
            close = _matching(tokens, index)
            if candidate is not None:
                name, open_at = candidate
                params, _ = _arguments(tokens, open_at)
                names = tuple(next((t.text for t in reversed(p) if t.kind == "ident"), "") for p in params)
                found[name] = _Function(name, names, tuple(tokens[index + 1 : close]))
            candidate = None
            index = close + 1
            continue
        index += 1
    return found


def _macros(directives: list[str]) -> dict[str, _Macro]:
    found = {}
    for directive in directives:
        match = _DEFINE.match(directive.strip())
        if not match or not match[1].startswith(MACRO_PREFIX):
            continue
        body = _tokens(match[3])
        if len(body) < 3 or body[0].kind != "ident" or body[1].text != "(":
            raise SourceError(f"#define {match[1]}: its body is not one function call")
        args, _ = _arguments(body, 1)
        params = tuple(p.strip() for p in match[2].split(","))
        found[match[1]] = _Macro(match[1], params, body[0].text, tuple(tuple(a) for a in args))
    return found


def _literal(tokens: list[_Token] | tuple[_Token, ...]) -> str | None:
    """Adjacent string literals joined and unescaped, or None when the tokens are not only literals."""
    if not tokens or any(t.kind != "string" for t in tokens):
        return None
    return "".join(_ESCAPE.sub(lambda m: _ESCAPES.get(m[1], m[1]), t.text[1:-1]) for t in tokens)


def _variable_field(function: _Function, variable: str) -> str | None:
    """``field`` when ``function`` initialises ``variable`` from ``(...)->field`` or ``x.field``."""
    body = function.body
    for index in range(len(body) - 1):
        if body[index].text == variable and body[index + 1].text == "=":
            end = next((i for i in range(index, len(body)) if body[i].text == ";"), index)
            if end - index >= 3 and body[end - 2].text in ("->", ".") and body[end - 1].kind == "ident":
                return body[end - 1].text
            return None
    return None


def _format_string(target: _Function) -> str | None:
    """The format the registering function builds a prefixed name with: the literal before ``pfx, name``."""
    body = target.body
    for index in range(len(body) - 4):
        window = [t.text for t in body[index + 1 : index + 5]]
        if body[index].kind == "string" and window == [",", "pfx", ",", "name"]:
            return _literal([body[index]])
    return None


class _Reader:
    def __init__(self, text: str) -> None:
        code, directives = _split_directives(_blank_comments(text))
        self.functions = _functions(_tokens(code))
        self.macros = _macros(directives)
        self.visited: set[int] = set()
        for macro in self.macros.values():
            target = self.functions.get(macro.target)
            if target is None or not set(_ROLES) <= set(target.params):
                raise SourceError(
                    f"#define {macro.name} calls {macro.target}, whose definition in the file has no "
                    f"parameters {', '.join(_ROLES)}. Fix: read the tag's macro and update _ROLES"
                )

    def _value(self, arg: list[_Token], where: _Function, binding: dict[str, str], line: int) -> str:
        """A prefix or label key: a literal, or a variable set from a field the caller set to a literal."""
        if (literal := _literal(arg)) is not None:
            return literal
        field = _variable_field(where, arg[0].text) if len(arg) == 1 else None
        if field is None or field not in binding:
            spelled = " ".join(t.text for t in arg)
            raise SourceError(
                f"line {line}: cannot resolve {spelled!r} in {where.name} to a string (no literal, and no "
                "field its caller sets to one). Fix: extend _value for this shape"
            )
        return binding[field]

    def _part(
        self,
        role: str,
        body_arg: tuple[_Token, ...],
        by_param: dict[str, list[_Token]],
        call: tuple[_Function, dict[str, str], int],
    ) -> str | None:
        """One role's value for one call: the macro body's argument with the call's arguments put in."""
        spelled = [t.text for t in body_arg]
        if spelled == ["NULL"]:
            return None
        if "XSTRINGIFY" in spelled:
            # "slurm_" XSTRINGIFY(name): the literal before it joined to the argument's own spelling.
            at = spelled.index("XSTRINGIFY")
            argument = by_param[spelled[at + 2]]
            if len(argument) != 1 or argument[0].kind != "ident":
                raise SourceError(f"line {call[2]}: the name argument is not one identifier")
            return (_literal(body_arg[:at]) or "") + argument[0].text
        if len(spelled) != 1 or spelled[0] not in by_param:
            return _literal(body_arg)
        argument = by_param[spelled[0]]
        if [t.text for t in argument] == ["NULL"]:
            return None
        if role == "desc":
            return _literal(argument)
        if role in ("pfx", "key"):
            return self._value(argument, *call)
        return " ".join(t.text for t in argument)  # the label value: known only at run time

    def _family(
        self,
        macro: _Macro,
        actual: list[list[_Token]],
        call: tuple[_Function, dict[str, str], int],
        endpoint: str,
    ) -> NativeFamily:
        line = call[2]
        if len(actual) != len(macro.params):
            raise SourceError(
                f"line {line}: {macro.name} takes {len(macro.params)} arguments, not {len(actual)}"
            )
        by_param = dict(zip(macro.params, actual, strict=True))
        target = self.functions[macro.target]
        parts: dict[str, str | None] = {}
        kind = "unknown"
        for param, body_arg in zip(target.params, macro.args, strict=False):
            spelled = [t.text for t in body_arg]
            if len(spelled) == 3 and spelled[:2] == ["METRIC_TYPE_", "##"]:
                # METRIC_TYPE_GAUGE is printed "gauge" (openmetrics.h's openmetrics_type_str)
                kind = "".join(t.text for t in by_param[spelled[2]]).lower().replace("_", "")
            elif param in _ROLES:
                parts[param] = self._part(param, body_arg, by_param, call)
        name, help_text = parts.get("name"), parts.get("desc")
        if not name or help_text is None:
            raise SourceError(f"line {line}: {macro.name} call without a name or a HELP string literal")
        if parts.get("pfx") is not None:
            fmt = _format_string(target)
            if fmt is None or fmt.count("%s") != 2:
                raise SourceError(f"{target.name}: no format with two %s applied to pfx and name")
            name = fmt.replace("%s", str(parts["pfx"]), 1).replace("%s", name, 1)
        key = parts.get("key")
        labels = (key,) if key and parts.get("val") is not None else ()
        return NativeFamily(name, help_text, labels, endpoint, line, kind)

    def walk(
        self, function: _Function, binding: dict[str, str], endpoint: str, seen: frozenset[str]
    ) -> Iterator[NativeFamily]:
        """Families in the order the C registers them: calls in order, a handed-over function in place."""
        assigned: dict[str, str] = {}  # fields of this function's locals set to string literals so far
        body = function.body
        index = 0
        while index < len(body):
            token = body[index]
            following = body[index + 1].text if index + 1 < len(body) else ""
            if token.kind == "ident" and token.text in self.macros and following == "(":
                actual, close = _arguments(body, index + 1)
                self.visited.add(token.line)
                yield self._family(self.macros[token.text], actual, (function, binding, token.line), endpoint)
                index = close + 1
                continue
            if token.kind == "ident" and token.text in self.functions and token.text not in seen:
                yield from self.walk(
                    self.functions[token.text], dict(assigned), endpoint, seen | {token.text}
                )
            if token.text in (".", "->") and index + 4 < len(body) and body[index + 2].text == "=":
                value = _literal([body[index + 3]])
                if value is not None and body[index + 4].text == ";":
                    assigned[body[index + 1].text] = value
            index += 1

    def families(self) -> list[NativeFamily]:
        found: list[NativeFamily] = []
        for name, function in self.functions.items():  # file order
            if name in ENDPOINTS:
                found += self.walk(function, {}, ENDPOINTS[name], frozenset({name}))
        calls = sorted(
            (token.line, name)
            for name, function in self.functions.items()
            for index, token in enumerate(function.body[:-1])
            if token.text in self.macros and function.body[index + 1].text == "("
        )
        if not calls:
            raise SourceError(
                f"no {MACRO_PREFIX}* call found. Fix: pass Slurm's {SOURCE_PATH} (25.11 or later) at the tag"
            )
        unreached = [f"line {line} in {name}" for line, name in calls if line not in self.visited]
        if unreached:
            raise SourceError(
                f"{MACRO_PREFIX}* calls no endpoint's entry point reaches: {', '.join(unreached)}. "
                "Fix: read src/slurmctld/http.c at the tag and add the entry point to ENDPOINTS"
            )
        return found


def families_from_source(text: str) -> list[NativeFamily]:
    """Every family openmetrics.c registers, in registration order; :class:`SourceError` when the text
    is not one this parser understands."""
    return _Reader(text).families()


def git_blob_sha(data: bytes) -> str:
    """The id git gives these bytes as a blob (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def document(data: bytes, tag: str, commit: str, path: str = SOURCE_PATH) -> dict[str, object]:
    """The JSON document: where the text comes from, and its families."""
    families = families_from_source(data.decode("utf-8"))
    source = {
        "repository": REPOSITORY,
        "tag": tag,
        "commit": commit,
        "path": path,
        "blob_sha": git_blob_sha(data),
    }
    return {"source": source, "families": [asdict(f) for f in families]}


# The families of the Slurm release the lab pins, read from its tag (ARCHITECTURE.md says how to make it).
PINNED_FAMILIES = Path(__file__).with_name("families-26.05.3.json")


def read_families(path: Path = PINNED_FAMILIES) -> list[NativeFamily]:
    """The families of a document :func:`document` wrote (``families-<version>.json`` beside this module)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return [NativeFamily(**{**f, "labels": tuple(f["labels"])}) for f in raw["families"]]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.slurm_native.source_families",
        description="Slurm's own metric families from its openmetrics.c, as JSON on stdout.",
    )
    parser.add_argument("source", metavar="OPENMETRICS_C", type=Path)
    parser.add_argument("--tag", required=True, help="the Slurm tag the file was read at")
    parser.add_argument("--commit", required=True, help="the tag's commit, 40 hex digits")
    parser.add_argument("--path", default=SOURCE_PATH, help="the file's path in the repository")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        print(
            f"--commit {args.commit}: not 40 hex digits. "
            f"Fix: pass git -C MIRROR rev-parse '{args.tag}^{{commit}}'",
            file=sys.stderr,
        )
        return 2
    if not args.source.is_file():
        print(
            f"{args.source}: no such file. Fix: write the tag's file there first, "
            f"git -C MIRROR show {args.tag}:{args.path} > {args.source}",
            file=sys.stderr,
        )
        return 1
    try:
        doc = document(args.source.read_bytes(), args.tag, args.commit, args.path)
    except (SourceError, UnicodeDecodeError) as error:
        print(f"{args.source}: {error}", file=sys.stderr)
        return 1
    json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
