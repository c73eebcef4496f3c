# Owns: the markdown-it-py side of extraction: its CommonMark block parser (preset
# "commonmark", block rules only) with the fence rule wrapped so each fence token
# records whether it ended on its own closing fence (EXT-3: markdown-it closes a fence
# silently at the end of the document or of its container) and the overrides of
# `cmarkrules` that make its block structure follow cmark-gfm, and reading the fence
# tokens of one region of the text.
#
# Must never: be imported at `import markertools` time (markdown_it is imported on
# first use only), parse inline content (not needed: fences are block tokens), or
# report a fence inside a block quote (EXT-2: quoted text).
#
# Invariants:
#   Rule 1: tokens are exactly those of `MarkdownIt("commonmark").parse(region)` with
#           the `cmarkrules` overrides installed (block tokens; the region is already
#           normalised: LF line ends, no NUL).
#   Rule 2: `closed` is computed from the parser's own line state right after the
#           fence rule ran, with the rule's own closing-fence test.
#   Rule 3: a region result says whether its end is a safe place to resume outside
#           markdown-it: no top-level fence or HTML block runs into the region's end,
#           and no container nesting reached markdown-it's nesting limit (past which
#           markdown-it drops the rest of the document).
#   Rule 4: a region is parsed with a final line break (the same blocks and lines):
#           without one, markdown-it-py 4.3 reads past the end of the text in
#           `StateBlock.getLines` when the last line is a block quote's empty line
#           under an HTML start (`>+`, `>   <!t`, `>`: IndexError).
from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Final

import attrs

_FENCE_ALT: Final[list[str]] = ["paragraph", "reference", "blockquote", "list"]
_md: Any = None


@attrs.frozen
class FenceToken:
    line: int  # 0-based line of the opening fence within the region
    info: str  # raw info string (not stripped)
    body: str  # content, container indentation removed
    closed: bool


@attrs.frozen
class RegionResult:
    fences: tuple[FenceToken, ...]
    safe_end: bool
    nesting_limit: bool


def _closed(state: Any, start: int, last: int, marker: str, length: int) -> bool:
    """Rule 2: does line `last` close the fence opened on `start`?"""
    if last <= start:
        return False
    pos = state.bMarks[last] + state.tShift[last]
    maximum = state.eMarks[last]
    if pos >= maximum or state.sCount[last] < state.blkIndent:
        return False
    if state.src[pos] != marker or state.sCount[last] - state.blkIndent >= 4:
        return False
    end = pos
    while end < maximum and state.src[end] == marker:
        end += 1
    if end - pos < length:
        return False
    while end < maximum and state.src[end] in " \t":
        end += 1
    return bool(end >= maximum)


def _wrap(rule: Callable[..., bool]) -> Callable[..., bool]:
    def fence_recording_close(state: Any, start: int, end: int, silent: bool) -> bool:
        if not rule(state, start, end, silent):
            return False
        if not silent:
            token = state.tokens[-1]
            markup = token.markup or "`"
            token.meta = {"closed": _closed(state, start, state.line - 1, markup[0], len(markup))}
        return True

    return fence_recording_close


def build(differences: Collection[str] | None = None) -> Any:
    """A MarkdownIt instance (preset "commonmark") with the fence rule wrapped (Rule 2)
    and the reference-following overrides of `cmarkrules` (all of them by default)."""
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import fence

    from markertools.parse.cmarkrules import DIFFERENCES, install

    md = MarkdownIt("commonmark")
    md.block.ruler.at("fence", _wrap(fence), {"alt": list(_FENCE_ALT)})
    install(md, DIFFERENCES if differences is None else differences)
    return md


def parser() -> Any:
    """The shared instance of `build()` (created, and markdown_it imported, on first use)."""
    global _md
    if _md is None:
        _md = build()
    return _md


def block_tokens(src: str, md: Any = None) -> list[Any]:
    """Rule 1: the block tokens of `src` (already normalised)."""
    md = md or parser()
    tokens: list[Any] = []
    md.block.parse(src, md, {}, tokens)
    return tokens


def parse_region(src: str, md: Any = None) -> RegionResult:
    """The unquoted fences of a region, and whether its end is safe (Rule 3)."""
    md = md or parser()
    line_count = src.count("\n") + (0 if src.endswith("\n") or not src else 1)
    if src and not src.endswith("\n"):
        src += "\n"  # Rule 4
    tokens = block_tokens(src, md)
    limit = int(md.options.get("maxNesting", 20))
    fences: list[FenceToken] = []
    quote_depth = 0
    safe_end = True
    nesting_limit = False
    for token in tokens:
        kind = token.type
        if token.nesting == 1 and token.level + 1 >= limit - 1:
            nesting_limit = True
        if kind == "blockquote_open":
            quote_depth += 1
        elif kind == "blockquote_close":
            quote_depth -= 1
        elif kind == "fence":
            closed = bool((token.meta or {}).get("closed", False))
            if token.level == 0 and not closed and token.map and token.map[1] >= line_count:
                safe_end = False
            if quote_depth == 0 and token.map:
                fences.append(FenceToken(token.map[0], token.info, token.content, closed))
        elif kind == "html_block" and token.level == 0 and token.map and token.map[1] >= line_count:
            safe_end = False
    return RegionResult(tuple(fences), safe_end, nesting_limit)
