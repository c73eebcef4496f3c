"""The reference renderers as oracles for extraction (issue 41).

Each oracle answers, for a document, the fenced code blocks it shows outside any block
quote whose info string is a kind or a near miss, as `Fence(line, info, body, closed)`:
the 1-based line of the opening fence, the info string as written (stripped of spaces
and tabs, NUL read as U+FFFD), the content when the fence closed on its own closing
fence (None otherwise), and whether it did.

- `cmark_fences`: cmark-gfm (`cmarkgfm`, the C reference implementation GitHub renders
  with) in CommonMark mode, no extension, raw HTML omitted. Blocks are read from its
  HTML with source positions; quotes from its `<blockquote>` elements.
- `markdown_it_fences`: markdown-it-py, preset "commonmark", unmodified (not the
  parser markertools configures).
- `markertools_fences`: `extract_blocks` (the fast path that `parse_turn` uses).

Neither renderer says whether a fence closed on its own closing fence or ended with
its container or the text. `_closed` finds out the same way for both: with content of
k lines, the fence closed iff it ended on line start + k + 1 and appending "x" to that
line (so it can no longer close anything, and changes no container) changes the block.

`compare` runs the three and says which differences are documented (docs/parse.md,
"Where the references differ"): with cmark-gfm, leading whitespace of body lines
(JSON ignores it) and the blocks past markdown-it's nesting limit (never run); with
markdown-it-py, any difference where markertools answers as cmark-gfm and which one of
the overrides D1-D9 of `markertools.parse.cmarkrules` explains (markertools built
without it answers otherwise). `assert_follows_the_references` is the check the tests
and `make exactness` apply to every document.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from html.parser import HTMLParser

import attrs
import cmarkgfm.cmark as cmark
from markdown_it import MarkdownIt

from markertools.parse.blocks import extract_blocks, normalize_text
from markertools.parse.cmarkrules import DIFFERENCES
from markertools.parse.commonmark import build, parse_region
from markertools.parse.nearmiss import ORDINARY, classify

_SOURCEPOS = cmark.Options.CMARK_OPT_SOURCEPOS
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
_MD = MarkdownIt("commonmark")


@attrs.frozen
class Fence:
    line: int
    info: str
    body: str | None
    closed: bool


# (line, info as written, content) of one fenced block, before the closed probe
Seen = tuple[int, str, str]


def _info_on(lines: list[str], line: int) -> str | None:
    """The info string of the fence opened on `line` (1-based), read from the text."""
    if line > len(lines):
        return None
    found = _FENCE_RUN.search(lines[line - 1])
    if found is None:
        return None
    return lines[line - 1][found.end() :].strip(" \t").replace("\0", "\ufffd")


def _lines(text: str) -> list[str]:
    return normalize_text(text).split("\n")


def _closed(render: Callable[[str], list[Seen]], lines: list[str], seen: Seen) -> bool:
    line, _, content = seen
    rows = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    end = line + rows + 1
    if end > len(lines) or not lines[end - 1].strip(" \t"):
        return False
    probe = lines.copy()
    probe[end - 1] += "x"
    return seen not in render("\n".join(probe))


def _fences(render: Callable[[str], list[Seen]], text: str) -> list[Fence]:
    lines = _lines(text)
    out: list[Fence] = []
    for seen in render(text):
        line, info, content = seen
        if classify(info) == ORDINARY:
            continue
        closed = _closed(render, lines, seen)
        out.append(Fence(line, info, content if closed else None, closed))
    return out


# ---- cmark-gfm ---------------------------------------------------------------------


class _CmarkHtml(HTMLParser):
    """The fenced code blocks of cmark's HTML: (line, content) outside quotes. A fenced
    block with an info string has a `language-` class; indented code has none."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.quotes = 0
        self.pre_line = 0
        self.code: list[str] | None = None
        self.code_line = 0
        self.found: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "blockquote":
            self.quotes += 1
        elif tag == "pre":
            self.pre_line = int((values.get("data-sourcepos") or "0:0").split(":")[0])
        elif tag == "code" and self.pre_line and "class" in values:
            self.code = []
            self.code_line = self.pre_line

    def handle_endtag(self, tag: str) -> None:
        if tag == "blockquote":
            self.quotes -= 1
        elif tag == "code" and self.code is not None:
            if self.quotes == 0:
                self.found.append((self.code_line, "".join(self.code)))
            self.code = None
        elif tag == "pre":
            self.pre_line = 0

    def handle_data(self, data: str) -> None:
        if self.code is not None:
            self.code.append(data)


def _cmark_seen(text: str) -> list[Seen]:
    reader = _CmarkHtml()
    reader.feed(cmark.markdown_to_html(text, _SOURCEPOS))
    reader.close()
    lines = _lines(text)
    out: list[Seen] = []
    for line, content in reader.found:
        info = _info_on(lines, line)
        if info is not None:
            out.append((line, info, content.replace("\r\n", "\n").replace("\r", "\n")))
    return out


def cmark_fences(text: str) -> list[Fence]:
    return _fences(_cmark_seen, text)


# ---- markdown-it-py ------------------------------------------------------------------


def _markdown_it_seen(text: str) -> list[Seen]:
    out: list[Seen] = []
    quote = 0
    try:
        tokens = _MD.parse(text)
    except IndexError:  # markdown-it-py 4.3 reads past the end of a few texts without a
        tokens = _MD.parse(text + "\n")  # final line break (commonmark.py, Rule 4)
    for token in tokens:
        if token.type == "blockquote_open":
            quote += 1
        elif token.type == "blockquote_close":
            quote -= 1
        elif token.type == "fence" and quote == 0 and token.map is not None:
            info = token.info.strip(" \t").replace("\0", "\ufffd")
            out.append((token.map[0] + 1, info, token.content))
    return out


def markdown_it_fences(text: str) -> list[Fence]:
    return _fences(_markdown_it_seen, text)


# ---- markertools -----------------------------------------------------------------------


def markertools_fences(text: str) -> list[Fence]:
    return [
        Fence(b.line, b.info, b.body if b.closed else None, b.closed)
        for b in extract_blocks(text)
    ]


def _fences_with(md: object, text: str) -> list[Fence]:
    """The full path's answer with another markdown-it configuration."""
    norm = normalize_text(text).replace("\0", "\ufffd")
    out = []
    for fence in parse_region(norm, md).fences:
        info = fence.info.strip(" \t")
        if classify(info) != ORDINARY:
            out.append(Fence(fence.line + 1, info, fence.body if fence.closed else None, fence.closed))
    return out


def _without(names: frozenset[str]) -> object:
    if names not in _WITHOUT:
        _WITHOUT[names] = build(DIFFERENCES - names)
    return _WITHOUT[names]


_WITHOUT: dict[frozenset[str], object] = {}


def explaining_differences(text: str) -> list[str]:
    """The overrides of `markertools.parse.cmarkrules` (D1-D9) without which markertools
    would answer differently on `text`: the documented differences that explain a
    difference from markdown-it-py. When no single one does (two overrides each lead to
    the answer), the pairs that do, written "D5+D9"."""
    ours = markertools_fences(text)
    found = [
        name
        for name in sorted(DIFFERENCES)
        if _fences_with(_without(frozenset({name})), text) != ours
    ]
    if not found:
        found = [
            f"{a}+{b}"
            for a, b in itertools.combinations(sorted(DIFFERENCES), 2)
            if _fences_with(_without(frozenset({a, b})), text) != ours
        ]
    return found


# ---- the verdict -----------------------------------------------------------------------


def _squeezed(fences: list[Fence]) -> list[Fence]:
    """Bodies with each line's leading spaces and tabs removed: cmark-gfm strips fewer
    columns than commonmark.js and markdown-it from some body lines (docs/parse.md,
    "Where the references differ"); JSON ignores that whitespace."""
    return [
        attrs.evolve(f, body="\n".join(x.lstrip(" \t") for x in f.body.split("\n")))
        if f.body is not None
        else f
        for f in fences
    ]


@attrs.frozen
class Verdict:
    text: str
    ours: list[Fence]
    cmark: list[Fence]
    markdown_it: list[Fence]
    explained_by: list[str]  # for a difference from markdown-it-py: the D1-D9 explaining it
    nesting_limit: bool  # markdown-it-py (so markertools) reached its nesting limit

    @property
    def cmark_agrees(self) -> bool:
        """The same blocks as cmark-gfm, body lines compared without leading whitespace."""
        return _squeezed(self.ours) == _squeezed(self.cmark)

    @property
    def cmark_exact(self) -> bool:
        return self.ours == self.cmark

    @property
    def cmark_documented(self) -> bool:
        """A difference from cmark-gfm docs/parse.md explains: past markdown-it's nesting
        limit no block runs (the blocks before it are cmark-gfm's)."""
        cmark = _squeezed(self.cmark)
        return self.nesting_limit and _squeezed(self.ours) == cmark[: len(self.ours)]

    @property
    def markdown_it_agrees(self) -> bool:
        return self.ours == self.markdown_it

    @property
    def markdown_it_documented(self) -> bool:
        """A difference from markdown-it-py where markertools follows cmark-gfm (up to the
        nesting limit), explained by at least one of the documented overrides (left
        out, the answer changes)."""
        return (self.cmark_agrees or self.cmark_documented) and bool(self.explained_by)

    def problems(self) -> list[str]:
        """Every undocumented disagreement, as a message naming the texts."""
        out = []
        if not self.cmark_agrees and not self.cmark_documented:
            out.append(f"cmark-gfm shows {self.cmark}")
        if not self.markdown_it_agrees and not self.markdown_it_documented:
            out.append(f"markdown-it-py shows {self.markdown_it} (explained by: {self.explained_by})")
        if out:
            out.insert(0, f"text {self.text!r}: markertools runs {self.ours}")
        return out


def compare(text: str) -> Verdict:
    ours = markertools_fences(text)
    other = markdown_it_fences(text)
    explained = explaining_differences(text) if ours != other else []
    norm = normalize_text(text).replace("\0", "\ufffd")
    return Verdict(
        text, ours, cmark_fences(text), other, explained, parse_region(norm).nesting_limit
    )


def assert_follows_the_references(text: str) -> Verdict:
    """The fast path answers as the full path, and both references agree with it or
    differ only as docs/parse.md documents."""
    assert extract_blocks(text) == extract_blocks(text, full=True)
    verdict = compare(text)
    assert not verdict.problems(), "\n".join(verdict.problems())
    return verdict
