"""Random CommonMark documents for the differential tests against the reference
renderers (issue 41; `tests/parse/test_parse_oracles.py`, `make exactness`).

A document is a sequence of blocks, each built by a recursive generator and joined by
zero, one or two separator lines, so every block also appears where it would interrupt
(or continue) the paragraph before it:

- leaves: paragraphs (with continuation lines that cannot interrupt a paragraph: an
  ordered item not starting at 1, an empty item, an HTML tag of type 7, indented code
  and indented marker fences), link reference definitions (one to three in a row,
  valid and nearly valid, titles on the next line, destinations in `<>`), setext
  headings (also under definitions), ATX headings, thematic breaks, fenced code of
  both characters with kind / near-miss / ordinary info strings and every closer shape
  (missing, short, long, other character, with text, over-indented), indented code,
  HTML blocks of the seven types, whose bodies hold marker fences;
- containers, nested up to five deep in any mix: block quotes (`>`, `> `, ` > `,
  `>` + tab) and list items (`-`, `+`, `*`, `1.`, `2)`, `10.`, `0.`, nine- and
  ten-digit numbers; 1-4 spaces, a tab or 5+ spaces after the marker; items that start
  with a blank line, empty items, continuation lines indented exactly, one column too
  far or too short, or through tabs), with lazy continuation lines that drop some or all
  of their container prefixes;
- noise: a line of the older line-shape pool (`parse.md_line`; rarely one nested past
  markdown-it's limit of 20) or after a run of quote and list markers, spaces and tabs
  in any order, tabs in place of leading spaces, CR / CRLF / LF chosen per document or
  per line.

The generator draws through `Pick`, so the same code runs under Hypothesis (shrinkable
draws: index 0 is always the simplest choice) and from a seeded `random.Random` (about
twenty times faster, for the 200,000-document run of `make exactness`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

from support.strategies.parse import CONTENT, DEEP, PREFIXES

T = TypeVar("T")


class Pick(Protocol):
    def index(self, n: int) -> int:
        """A number in [0, n); 0 is the simplest choice."""
        ...


class RandomPick:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def index(self, n: int) -> int:
        return self._rng.randrange(n)


class DrawPick:
    def __init__(self, draw: Callable[[st.SearchStrategy[int]], int]) -> None:
        self._draw = draw

    def index(self, n: int) -> int:
        return self._draw(st.integers(0, n - 1)) if n > 1 else 0


def one(p: Pick, options: Sequence[T]) -> T:
    return options[p.index(len(options))]


def chance(p: Pick, k: int) -> bool:
    """True one time in k (False is the simpler answer)."""
    return p.index(k) == k - 1


# A line of a block: its text and whether it may be written lazily (a paragraph
# continuation line may drop container prefixes and stay in the paragraph).
Line = tuple[str, bool]

KINDS = [
    "task-list", "task-create", "task-poll", "todo-list", "wait-threads", "task_cancel",
    "read-thread", "quota-status", "task-cost", "goal-convert",
]  # fmt: skip
NEAR = ["Task-List", "task_list", "(task-poll)", "task-lsit", "TODO_LIST", "task\\-list"]
ORDINARY_INFO = ["", "python", "json", "bash", "task-list json", "`x`", "task-list `x`"]
BODIES = [
    "{}", '{"task_id": "t1"}', '{"prompt": "x"}', "", "  indented", "x\ty", "``", "~~",
    "[ref]: /u", "- item", "> q", "<div>", "---", "===",
]  # fmt: skip
PARA = [
    "text", "Run the tests:", "**bold** step", "a `code` span", "文本 here", "x [a] y",
    "[ref] text", "[ref]:", "[ref]: ", "[not a def", "_e_ x", "some *text*",
]  # fmt: skip
# continuation lines that cannot interrupt a paragraph (they join it)
CONTINUATIONS = [
    "more text", "10. item", "2) two", "0. zero", "-", "*", "1.", "+   ", "<custom-tag>",
    "<span class='x'>", "</span>", "    ```task-list", "\t```task-list", "    {}",
    "[ref]: /u", "x ```task-list", "\\# no", "1234567890. big",
]  # fmt: skip
DEFINITIONS = [
    '[ref]: http://x.example "t"', "[ref]: /u", "[Ref 2]: <x y> 't'", "[ref]: /u (p)",
    "[ref]: <>", "[ref]: /u(a(b))", "[ref]:  /u  'x'  ", "[a\\]b]: /u", "   [ref]: /u",
    "[ref]: /u 't'\t", "[ref]: /u\\ x", "[r]: u", "[ref]:\t/u", "[ref]: <a>b",
    # not definitions (paragraph text whatever follows)
    "[]: /u", "[ ]: /u", "[ref] : /u", "[ref]: /u \"t\" junk", "[ref]:", "[lab[el]: /u",
    "[ref]: <a\nb>", "[ref]: /u \"t\"x", "[" + "x" * 1000 + "]: /u", "[ref]: a <b",
]  # fmt: skip
# a definition's second line (destination or title on its own line, or neither)
DEF_TAILS = [
    '"title"', "'t'", "(t)", '"two', 'lines"', "/url", "/url 'x'", "  /url", "text", "'x' y",
]  # fmt: skip
UNDERLINES = ["===", "---", "= =", "  ---", "    ===", "-", "=", "--- x", "===   "]
BREAKS = ["---", "***", "* * *", "___", "- - -", "  ***", "-- -"]
HEADINGS = ["# h", "## ```task-list", "#no", "###### six", "####### seven", "# "]
HTML_TYPES: list[tuple[str, str]] = [
    ("<script>", "</script>"),
    ("<pre>", "</pre>"),
    ("<style type='x'>", "</style>"),
    ("<textarea>", "</textarea>"),
    ("<!--", "-->"),
    ("<?php", "?>"),
    ("<!DOCTYPE html>", ""),
    ("<![CDATA[", "]]>"),
    ("<div>", "</div>"),
    ("<table>", ""),
    ("</p>", ""),
    ("<custom-tag>", "</custom-tag>"),
    ("<a href='x'>", ""),
    ("</span>", ""),
]
BULLETS = ["-", "+", "*"]
ORDERED = ["1.", "1)", "2.", "10.", "0.", "123456789.", "1234567890.", "3)"]
QUOTES = ["> ", ">", " > ", ">\t", "   > "]


def fence_opener(p: Pick) -> tuple[str, str, int]:
    """(opener line, fence character, run length)."""
    char = one(p, ["`", "`", "~"])
    run = one(p, [3, 3, 4, 5])
    info = one(p, [KINDS, KINDS, KINDS, NEAR, ORDINARY_INFO])
    text = one(p, info)
    spacer = one(p, ["", "", " ", "\t"]) if text else one(p, ["", "  "])
    return char * run + spacer + text, char, run


def fenced(p: Pick) -> list[Line]:
    opener, char, run = fence_opener(p)
    indent = one(p, ["", "", "", " ", "  ", "   ", "\t"])
    lines: list[Line] = [(indent + opener, False)]
    for _ in range(p.index(4)):
        lines.append((one(p, ["", "", " ", "   ", "     "]) + one(p, BODIES), False))
    shape = p.index(9)
    closer = char * run
    if shape <= 3:
        closer = one(p, ["", "", " ", "  ", "   "]) + closer + one(p, ["", "", "  "])
    elif shape == 4:
        closer = char * (run + 2)
    elif shape == 5:
        closer = char * max(run - 1, 2)
    elif shape == 6:
        closer = ("~" if char == "`" else "`") * run
    elif shape == 7:
        closer = one(p, ["    ", "\t", " " * 5]) + closer
    else:
        closer = closer + one(p, [" x", "x"])
    if shape != 8 or chance(p, 2):
        lines.append((closer, False))
    return lines


def paragraph(p: Pick) -> list[Line]:
    lines: list[Line] = [(one(p, PARA), False)]
    for _ in range(p.index(3)):
        lines.append((one(p, CONTINUATIONS if chance(p, 2) else PARA), True))
    return lines


def definitions(p: Pick) -> list[Line]:
    lines: list[Line] = []
    for i in range(1 + p.index(3)):
        first = one(p, DEFINITIONS)
        for part in first.split("\n"):
            lines.append((part, bool(lines)))
        if chance(p, 3):
            lines.append((one(p, DEF_TAILS), True))
        if i == 0 and chance(p, 4):
            lines.append((one(p, PARA), True))
    if chance(p, 3):  # a setext underline straight after the definitions
        lines.append((one(p, UNDERLINES), False))
    return lines


def setext(p: Pick) -> list[Line]:
    lines = paragraph(p) if chance(p, 2) else definitions(p)
    return [*lines, (one(p, UNDERLINES), False)]


def html_block(p: Pick) -> list[Line]:
    start, end = one(p, HTML_TYPES)
    lines: list[Line] = [(start + one(p, ["", "", " x", " ```task-list"]), False)]
    for _ in range(p.index(3)):
        if chance(p, 2):
            lines.extend(fenced(p))
        else:
            lines.append((one(p, ["text", "", "  x", "> q", "- i"]), False))
    if end and not chance(p, 4):
        lines.append((one(p, ["", "x "]) + end, False))
    return lines


def indented_code(p: Pick) -> list[Line]:
    return [
        (one(p, ["    ", "\t", "     ", "  \t"]) + one(p, ["```task-list", "{}", "code", "~~~"]), False)
        for _ in range(1 + p.index(2))
    ]


def leaf(p: Pick) -> list[Line]:
    shape = p.index(14)
    if shape <= 4:
        return fenced(p)
    if shape <= 6:
        return paragraph(p)
    if shape <= 8:
        return definitions(p)
    if shape == 9:
        return setext(p)
    if shape == 10:
        return html_block(p)
    if shape == 11:
        return indented_code(p)
    if shape == 12:
        return [(one(p, BREAKS + HEADINGS), False)]
    # a line of the older pool (`parse.md_line`): a prefix and a line shape, rarely one
    # nested deeper than markdown-it's limit; or a run of container markers, spaces and
    # tabs in any order (tab stops after nested quote markers and list markers)
    if chance(p, 30):
        return [(one(p, DEEP), False)]
    body = one(p, CONTENT) if chance(p, 2) else fence_opener(p)[0]
    if chance(p, 2):
        return [("".join(one(p, SOUP) for _ in range(p.index(6))) + body, False)]
    return [(one(p, PREFIXES) + body, False)]


SOUP = [">", "> ", ">\t", " ", "  ", "\t", "- ", "-\t", "1. ", "1.\t", "* ", ">>", "   "]


def _tabify(p: Pick, text: str) -> str:
    """Sometimes write leading spaces with a tab (same or nearby columns)."""
    stripped = text.lstrip(" ")
    width = len(text) - len(stripped)
    if width < 2 or not chance(p, 4):
        return text
    if width >= 4:
        return one(p, ["\t", " \t", "  \t"]) + " " * (width - 4) + stripped
    return one(p, ["\t", " \t"]) + stripped


def quote(p: Pick, budget: Budget, depth: int) -> list[Line]:
    prefix = one(p, QUOTES)
    budget.take()
    inner = blocks(p, budget, depth + 1)
    out: list[Line] = []
    for i, (text, lazy) in enumerate(inner):
        if lazy and i > 0 and chance(p, 3):
            out.append((text, True))  # lazy continuation: the prefix is dropped
        elif not text.strip(" \t"):
            out.append((one(p, [prefix.rstrip(" \t"), prefix, ""]) if i else prefix, False))
        else:
            out.append((prefix + text, lazy))
    return out


def list_block(p: Pick, budget: Budget, depth: int) -> list[Line]:
    ordered = chance(p, 2)
    marker = one(p, ORDERED) if ordered else one(p, BULLETS)
    out: list[Line] = []
    for item in range(1 + p.index(3)):
        if item and not budget.take():
            break
        if chance(p, 5):  # another marker of the same kind of list, or not
            marker = one(p, ORDERED + BULLETS)
        gap_shape = p.index(8)
        gap = " " * (1 + min(gap_shape, 3)) if gap_shape < 6 else one(p, ["\t", " " * 5, "  \t"])
        width = len(marker) + (len(gap) if gap_shape < 6 else 1)
        inner = [] if chance(p, 8) else blocks(p, budget, depth + 1)
        if inner and chance(p, 6):
            inner = [("", False), *inner]  # the item starts with a blank line
        if not inner:
            out.append((marker, False))
            continue
        for i, (text, lazy) in enumerate(inner):
            if i == 0:
                out.append(((marker + gap + text) if text else marker, False))
                continue
            if not text.strip(" \t"):
                out.append((one(p, ["", "", " " * width]), False))
                continue
            if lazy and chance(p, 3):
                out.append((text, True))
                continue
            shift = one(p, [0, 0, 0, 0, 1, -1, 2])
            indent = " " * max(width + shift, 0)
            out.append((_tabify(p, indent + text), lazy))
    return out


class Budget:
    """How many more blocks a document may get (keeps documents small: 1-40 lines)."""

    def __init__(self, blocks: int) -> None:
        self.left = blocks

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


def blocks(p: Pick, budget: Budget, depth: int = 0) -> list[Line]:
    out: list[Line] = []
    count = 1 + p.index(6 if depth == 0 else 3)
    for i in range(count):
        if i and not budget.take():
            break
        if i:
            out.extend([("", False)] * one(p, [1, 1, 0, 0, 2]))
        shape = p.index(7) if depth < 5 and budget.left > 0 else 0
        if shape <= 2:
            out.extend(leaf(p))
        elif shape <= 4:
            out.extend(list_block(p, budget, depth))
        else:
            out.extend(quote(p, budget, depth))
    return out


ENDINGS = ["\n", "\n", "\n", "\r\n", "\r", "mixed"]


def document(p: Pick) -> str:
    budget = Budget(3 + p.index(10))
    lines = [_tabify(p, text) for text, _ in blocks(p, budget)]
    ending = one(p, ENDINGS)
    parts: list[str] = []
    for text in lines:
        parts.append(text)
        parts.append(one(p, ["\n", "\r\n", "\r"]) if ending == "mixed" else ending)
    if parts and chance(p, 3):
        parts.pop()  # no line break at the end
    return "".join(parts)


def random_document(seed: int) -> str:
    return document(RandomPick(seed))


@st.composite
def commonmark_documents(draw: Any) -> str:
    """The generator under Hypothesis (shrinkable)."""
    return document(DrawPick(draw))
