"""Hypothesis strategies and helpers for the parse-layer tests.

`markdownish()` draws documents built from the line shapes that decide CommonMark block
structure around fences: fences of both characters and several lengths with kind,
near-miss and ordinary info strings, indentation (spaces and tabs), block quotes, bullet
and ordered list markers, HTML block starts and ends, blank and whitespace-only lines,
paragraphs, headings, thematic breaks, deep nesting, and CR / CRLF line endings.

The references themselves (cmark-gfm, markdown-it-py) are read by `support.oracles`.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

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


def block(kind: str, body: str) -> str:
    """A marker block as an agent writes it."""
    return f"```{kind}\n{body}\n```\n"


# ---- bodies drawn from a kind's JSON Schema --------------------------------------------
# hypothesis-jsonschema does not run with this Hypothesis version, so this interprets the
# subset of JSON Schema that `markertools.parse.schema` emits (type, enum, string lengths and
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


# ---- list-item documents (the shapes `_extract_list` decides without markdown-it) ------
# Drawn around the walker's boundaries: markers with 0-6 spaces or a tab after them,
# plain and not-quite-plain first characters, indentation on both sides of the content
# offset (and of offset + 3 / + 4), tabs in leading whitespace, fences of both
# characters with closers that are too short, too indented, under-indented or carry
# text, blank lines with and without tabs, and lazy or column-0 lines that end a walk.

LIST_MARKERS = ["-", "+", "*", "1.", "2.", "1)", "10.", "123456789.", "1234567890.", "a."]
LIST_CONTENT = [
    "Start the worker:", "text", "**bold** step", "*it* x", "__u__", "_e_", "`code` x",
    "``x``", "~x", "~~x", "- nested", "* * *", "***", "--", "# h", "> q", "<div>", "[ref]: /u",
    "[link](x)", "2024 year", "3. item", "\xa0nbsp", "\u3000全角", "文本", "\x00nul", "\x0cff",
    "=", "===", "---", "+ x", "!bang", "\\- esc", "", " ", "    code",
]  # fmt: skip
LIST_BODIES = ['{"prompt": "x"}', "{}", '{"task_id": "t1"}', "", "  indented", "x\ty"]
LIST_GAPS = [" ", " ", "  ", "   ", "    ", "     ", "      ", "\t", " \t", ""]
LIST_INDENTS = [
    "",
    " ",
    "  ",
    "   ",
    "    ",
    "     ",
    "      ",
    " " * 7,
    " " * 9,
    "\t",
    "  \t",
    "\t  ",
]


@st.composite
def list_fence(draw: Any, kinds: bool = True) -> str:
    char = draw(st.sampled_from(["`", "`", "`", "~"]))
    run = char * draw(st.integers(3, 5))
    infos = INFOS if kinds else ["python", "bash", ""]
    return run + draw(st.sampled_from(["", "", " "])) + draw(st.sampled_from(infos))


@st.composite
def list_line(draw: Any) -> str:
    shape = draw(st.integers(0, 9))
    if shape <= 2:  # an item line
        marker = draw(st.sampled_from(LIST_MARKERS))
        gap = draw(st.sampled_from(LIST_GAPS))
        content = draw(st.one_of(st.sampled_from(LIST_CONTENT), list_fence()))
        return marker + gap + content
    indent = draw(st.sampled_from(LIST_INDENTS))
    if shape <= 4:  # a fence opener
        return indent + draw(list_fence())
    if shape <= 6:  # a closer (or nearly one)
        char = draw(st.sampled_from(["`", "~"]))
        tail = draw(st.sampled_from(["", "", "  ", "\t", " x"]))
        return indent + char * draw(st.integers(2, 6)) + tail
    if shape == 7:
        return indent + draw(st.sampled_from(LIST_BODIES))
    if shape == 8:
        return draw(st.sampled_from(["", "", "   ", "\t", "      "]))
    return indent + draw(st.sampled_from(LIST_CONTENT))


@st.composite
def list_item(draw: Any) -> list[str]:
    """One item as an agent writes it: marker line, then units indented around its content
    offset c (mostly exactly c): plain lines, blank lines and fences with bodies and a
    closer, each sometimes off by a little."""
    marker = draw(st.sampled_from(LIST_MARKERS))
    gap = " " * draw(st.sampled_from([1, 1, 1, 2, 3, 4, 5]))
    c = len(marker) + len(gap)
    shift = st.sampled_from([0, 0, 0, 0, 0, 1, 2, 3, 4, -1, -c])

    def pad(delta: int) -> str:
        return " " * max(c + delta, 0)

    first = draw(st.one_of(st.sampled_from(LIST_CONTENT[:12]), list_fence()))
    lines = [marker + gap + first]
    if first.startswith(("```", "~~~")):
        lines.append(pad(draw(shift)) + draw(st.sampled_from(LIST_BODIES)))
        lines.append(pad(draw(shift)) + first[:3])
    for _ in range(draw(st.integers(0, 4))):
        unit = draw(st.integers(0, 5))
        if unit == 0:
            lines.append(pad(draw(shift)) + draw(st.sampled_from(LIST_CONTENT)))
        elif unit == 1:
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
        else:
            opener = draw(list_fence())
            lines.append(pad(draw(shift)) + opener)
            for _ in range(draw(st.integers(0, 2))):
                lines.append(pad(draw(shift)) + draw(st.sampled_from(LIST_BODIES)))
            if draw(st.integers(0, 5)):
                run = opener[0] * draw(st.sampled_from([3, 3, 3, 4, 5, 2]))
                lines.append(pad(draw(shift)) + run + draw(st.sampled_from(["", "", " ", " x"])))
    return lines


@st.composite
def list_docs(draw: Any) -> str:
    """Documents made mostly of list items holding fences (see above)."""
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(["Intro text.", "```python\nx\n```", "> q", ""])))
            parts.append("")
        if draw(st.integers(0, 3)):
            for _ in range(draw(st.integers(1, 3))):
                parts.extend(draw(list_item()))
        else:
            parts.extend(draw(st.lists(list_line(), min_size=1, max_size=12)))
    ending = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    text = ending.join(parts)
    return text + ending if draw(st.booleans()) else text
