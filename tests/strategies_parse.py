"""Hypothesis strategies and helpers for the parse-layer tests.

`markdownish()` draws documents built from the line shapes that decide CommonMark block
structure around fences: fences of both characters and several lengths with kind,
near-miss and ordinary info strings, indentation (spaces and tabs), block quotes, bullet
and ordered list markers, HTML block starts and ends, blank and whitespace-only lines,
paragraphs, headings, thematic breaks, deep nesting, and CR / CRLF line endings.

`reference_fences()` reads markdown-it-py's own fence tokens (the reference).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st
from markdown_it import MarkdownIt

from markertools._nearmiss import ORDINARY, classify

INFOS = [
    "task-create", "task-poll", "task-read", "read-thread", "read_thread", "wait-threads",
    "wait_threads", "task-cancel", "task_cancel", "task-retry", "todo-list", "todo-create",
    "todo-update", "task-list", "task-cost", "quota-status", "task-files", "goal-convert",
    "automation-create", "Task-Create", "task_create", "(task-poll)", "task-creat", "tsak-list",
    "task-create json", "python", "bash", "", "json", "`x`", "task-create `x`", "~~~",
    "task\\-create", "task-create\t", " task-list ", "todo-list\x00", "TODO_LIST",
]  # fmt: skip
PREFIXES = [
    "", "", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "> ", ">", "> > ", "- ", "* ",
    "+ ", "1. ", "10) ", "  - ", "   1. ", "- > ", "> - ", "-\t", "  ", "      ", "- - ",
]  # fmt: skip
CONTENT = [
    "text", "para text here", "{}", '{"prompt": "x"}', '{"task_id": "t1"}', "<div>", "</div>",
    "<!--", "-->", "<pre>", "</pre>", "<script>", "</script>", "<?php", "?>", "<![CDATA[", "]]>",
    "<!DOCTYPE html>", "<custom-tag>", "</custom-tag>", "<a href='x'>", "# heading", "---", "===",
    "* * *", "[ref]: /url", "    code", "- item", "1. item", "", " ", "\t", "> quoted",
]  # fmt: skip
DEEP = ["- " * 11 + "x", ">" * 21 + " x", "  " * 9 + "- y", "1. " * 10 + "z", "\t" * 5 + "- w"]
ENDINGS = ["\n", "\n", "\n", "\n", "\r\n", "\r"]


@st.composite
def fence_line(draw: Any) -> str:
    char = draw(st.sampled_from(["`", "`", "~"]))
    run = char * draw(st.integers(3, 5))
    info = draw(st.sampled_from(INFOS))
    spacer = draw(st.sampled_from(["", "", " ", "\t"]))
    return run + (spacer + info if info else draw(st.sampled_from(["", "", "  ", " \t"])))


@st.composite
def md_line(draw: Any) -> str:
    prefix = draw(st.sampled_from(PREFIXES))
    kind = draw(st.integers(0, 9))
    if kind <= 4:
        body = draw(fence_line())
    elif kind == 5:
        body = draw(st.sampled_from(DEEP))
    else:
        body = draw(st.sampled_from(CONTENT))
    return prefix + body


@st.composite
def markdownish(draw: Any, max_lines: int = 30) -> str:
    """A markdown-ish document; line endings mostly LF, sometimes CRLF or CR."""
    lines = draw(st.lists(md_line(), max_size=max_lines))
    ending = draw(st.sampled_from(ENDINGS))
    text = ending.join(lines)
    if draw(st.booleans()):
        text += ending
    return text


def any_text() -> st.SearchStrategy[str]:
    """Arbitrary `str`, including lone surrogates, NUL and control characters, mixed with
    fence-ish material so the scanner gets exercised."""
    pieces = st.one_of(
        st.text(st.characters(codec=None, exclude_categories=()), max_size=40),
        st.sampled_from(["```", "~~~", "\n", "\r\n", "\r", "> ", "- ", "   ", "\x00", "\ud800"]),
        fence_line(),
    )
    return st.lists(pieces, max_size=40).map("".join)


_MD = MarkdownIt("commonmark")


def reference_fences(text: str) -> list[tuple[int, str, str]]:
    """(1-based line, stripped info, content) of every fence markdown-it-py shows outside
    a block quote whose info string is a kind or a near miss."""
    out: list[tuple[int, str, str]] = []
    quote = 0
    for token in _MD.parse(text):
        if token.type == "blockquote_open":
            quote += 1
        elif token.type == "blockquote_close":
            quote -= 1
        elif token.type == "fence" and quote == 0 and token.map is not None:
            info = token.info.strip(" \t")
            if classify(info) != ORDINARY:
                out.append((token.map[0] + 1, info, token.content))
    return out


def block(kind: str, body: str) -> str:
    """A marker block as an agent writes it."""
    return f"```{kind}\n{body}\n```\n"


# ---- bodies drawn from a kind's JSON Schema --------------------------------------------
# hypothesis-jsonschema does not run with this Hypothesis version, so this interprets the
# subset of JSON Schema that `markertools._schema` emits (type, enum, string lengths and
# patterns, integer / number bounds, arrays, anyOf, and the object-level required /
# oneOf-required / anyOf-required constraints). Tests still validate every drawn body
# with `jsonschema`, so a gap here can only make a test weaker, never wrong.

_NONBLANK = re.compile(r"\S")
_extra_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**9), 10**9)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "anyOf" in schema:
        return st.one_of([_value(s) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    types = schema.get("type")
    if isinstance(types, list):
        return st.one_of([_value({**schema, "type": t}) for t in types])
    if types == "null":
        return st.none()
    if types == "boolean":
        return st.booleans()
    if types == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        ints = st.integers(low, high)
        small = st.integers(max(low, -(2**52)), min(high, 2**52)).map(float)
        return st.one_of(ints, small)
    if types == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.one_of(
            st.integers(int(low), int(high)),
            st.floats(low, high, allow_nan=False, allow_infinity=False),
        )
    if types == "array":
        return st.lists(_value(schema["items"]), min_size=schema.get("minItems", 0), max_size=10)
    if types == "string":
        if "pattern" in schema and schema["pattern"] != r"\S":
            return st.from_regex(schema["pattern"], fullmatch=True)
        text = st.text(
            min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 40), 40)
        )
        if schema.get("pattern") == r"\S":
            text = text.filter(_NONBLANK.search)
        return text
    raise NotImplementedError(schema)


@st.composite
def from_body_schema(draw: Any, schema: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = schema["properties"]
    must: set[str] = set()
    never: set[str] = set()
    non_null: set[str] = set()
    for rule in schema.get("allOf", []):
        if "required" in rule:
            must.update(rule["required"])
        elif "oneOf" in rule:
            names = [r["required"][0] for r in rule["oneOf"]]
            chosen = draw(st.sampled_from(names))
            must.add(chosen)
            never.update(n for n in names if n != chosen)
        elif "anyOf" in rule:
            chosen = draw(st.sampled_from([r["required"][0] for r in rule["anyOf"]]))
            must.add(chosen)
            non_null.add(chosen)
    body: dict[str, Any] = {}
    for name, sub in props.items():
        if name in never or (name not in must and not draw(st.booleans())):
            continue
        value = draw(_value(sub).filter(lambda v, n=name: v is not None or n not in non_null))
        body[name] = value
    extra = draw(st.dictionaries(st.text(max_size=6), _extra_values, max_size=3))
    body.update({k: v for k, v in extra.items() if k not in props})
    return body
