# Owns: the overrides of markdown-it-py's block rules that make its block structure
# follow cmark-gfm (the CommonMark reference implementation in C, which GitHub renders
# with) where markdown-it-py differs from it (issue 41; docs/parse.md, "Where the
# references differ"), and `definitions_end`, cmark's parser of link reference
# definitions at the start of a paragraph.
#
# The differences, each with the smallest text that shows it ("block" = a marker fence
# shown as a code block; cmark-gfm and commonmark.js agree unless said otherwise):
#   D1 A link reference definition is paragraph text until its paragraph closes (cmark
#      removes definitions from a closed paragraph); markdown-it makes it a block of its
#      own, after which any block can start. `[r]: /u`, `10. item`, an indented fence:
#      one paragraph, no block (an ordered list not starting at 1 cannot interrupt a
#      paragraph). Override: rule "reference" off.
#   D2 A setext underline under a paragraph of definitions only is paragraph text
#      (cmark-gfm; commonmark.js reads `---` there as a thematic break). Override: rule
#      "lheading" replaced by `_paragraph`, which also builds every plain paragraph.
#   D3 A list item whose content so far is definitions only has no child once that
#      paragraph closes, so a blank line indented less than its content ends it.
#      `1. [r]: /u`, two empty lines, a tab-indented fence: no block. Override: the
#      paragraph rule ends such an item (raises blkIndent; the list rule resets it).
#   D4 A line indented less than the innermost list item's content is measured from the
#      content of the deepest container it reaches; 4+ columns there make it a lazy
#      paragraph line, never a block start (markdown-it measures from the innermost
#      item). `-    * l`, `    *`, `     ```x`: a block in the outer item. A line a block
#      quote took as lazy starts nothing inside the quote either. Override: every rule
#      that can end a paragraph or a quote declines such a line.
#   D5 An HTML start of type 7 (`<custom-tag>`) on a lazy line starts an HTML block
#      (only the innermost container's paragraph keeps it out); markdown-it keeps it as
#      paragraph text. `9. t`, `<n>`, a fence at column 0: the fence is HTML, no block.
#      Override: html_block ends a paragraph or quote on such a line.
#   D6 A `>` indented 4+ columns past its container's content does not continue a block
#      quote (markdown-it takes it as a quote line). Override: the blockquote rule sees
#      such lines as lazy lines (sCount -1 while it runs, as it marks lazy lines).
#   D7 An empty list item goes on over blank lines indented to its content, and ends at
#      one that is not (cmark-gfm; commonmark.js and markdown-it end it at its first
#      blank line). `*`, `  `, a tab-indented fence: a block in the item. Override: the
#      list rule's "is the next line empty" test after an empty item answers so.
#   D8 A lazy line keeps its indentation past the containers it reaches in cmark-gfm's
#      paragraph text, so a definition on it does not count as one for D2 and D3
#      (commonmark.js strips it). Override: `_paragraph_text` (block quotes record the
#      indentation of their lazy lines).
#   D9 Tab stops after a block quote marker inside another block quote count from the
#      real line start (markdown-it forgets the outer quote's columns, so a tab after
#      the inner ">" may give 3 columns instead of 4). `- >>  > \th`, `n`, a 4-space
#      indented fence: indented code `h`, then a paragraph; markdown-it: a paragraph,
#      then the block. Override: `tokenize`, when a quote calls it, recounts the quote
#      lines' bsCount.
#   Container columns for D4 and D8 come from `tokenize`, wrapped to keep a stack of
#   the open containers' content columns in the parse's env.
#
# Must never: change anything but block structure (inline content is not parsed),
# import markdown_it at module import time (`install` runs on the first zone), or make
# a parse superlinear (a paragraph's text is read at most twice, and only for a
# paragraph that starts with "["; a quote's lines are walked once more; the container
# stack is at most markdown-it's nesting limit deep).
#
# Invariants:
#   Rule 1: without D1-D9's constructs (a paragraph starting with "[", an outdented
#           lazy line, a type-7 start on a lazy line, an indented ">" line in a quote,
#           an empty list item followed by a blank line, a tab after a nested quote
#           marker), the tokens are markdown-it's: every override defers to the
#           original rule.
#   Rule 2: `definitions_end(s)` is where cmark-gfm's loop over
#           `cmark_parse_reference_inline` (while the rest starts with "[") stops.
from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any, Final

Rule = Callable[[Any, int, int, bool], bool]

_STACK: Final = "markertools.containers"  # env key: content columns of open containers
_LAZY: Final = "markertools.lazy"  # env key: line -> indentation of a quote's lazy line
_FACTS: Final = "markertools.facts"  # env key: what the text holds (`_holds`)
_PATCHED: Final = "markertools.patched"  # env key: a list rule patched state.isEmpty
_MAX_LABEL_BYTES: Final = 1000
_PUNCT: Final = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_SPACE: Final = " \t\n\r"  # cmark_isspace
_TERMINATORS: Final = ("table", "fence", "blockquote", "hr", "list", "html_block", "heading")
_QUOTE: Final = -1  # a stack entry: a block quote (its content starts at column 0 again)


# ---- link reference definitions (D1-D3) --------------------------------------------------


def _label_end(s: str, i: int) -> int:
    """After `[label]` starting at s[i] == "[" (cmark `link_label`), or -1."""
    n = len(s)
    j = i + 1
    size = 0
    while j < n and s[j] not in "[]":
        if s[j] == "\\" and j + 1 < n and s[j + 1] in _PUNCT:
            size += 2
            j += 2
        else:
            size += len(s[j].encode("utf-8", "surrogatepass"))
            j += 1
        if size > _MAX_LABEL_BYTES:
            return -1
    if j >= n or s[j] != "]" or not s[i + 1 : j].strip(_SPACE):
        return -1
    return j + 1


def _skip_spaces(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def _line_end(s: str, i: int) -> int:
    """After a line end at i (cmark `skip_line_end`: also true at the end), or -1."""
    j = i
    if j < len(s) and s[j] == "\r":
        j += 1
    if j < len(s) and s[j] == "\n":
        j += 1
    return j if j > i or j >= len(s) else -1


def _spnl(s: str, i: int) -> int:
    i = _skip_spaces(s, i)
    end = _line_end(s, i)
    return _skip_spaces(s, end) if end >= 0 else i


def _destination(s: str, i: int) -> int:
    """After the link destination at i (cmark `manual_scan_link_url`), or -1."""
    n = len(s)
    if i < n and s[i] == "<":
        j = i + 1
        while j < n:
            c = s[j]
            if c == ">":
                j += 1
                break
            if c == "\\":
                j += 2
            elif c in "\n<":
                return -1
            else:
                j += 1
        return -1 if j >= n else j
    j = i
    depth = 0
    while j < n:
        c = s[j]
        if c == "\\" and j + 1 < n and s[j + 1] in _PUNCT:
            j += 2
        elif c == "(":
            depth += 1
            j += 1
            if depth > 32:
                return -1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
            j += 1
        elif c in _SPACE:
            if j == i:
                return -1
            break
        else:
            j += 1
    return -1 if j >= n else j


def _title(s: str, i: int) -> int:
    """After the longest link title at i (cmark `scan_link_title`), or -1."""
    n = len(s)
    if i >= n or s[i] not in "\"'(":
        return -1
    close = ")" if s[i] == "(" else s[i]
    banned = "()" if s[i] == "(" else close
    end = -1
    reach = {i + 1}
    j = i + 1
    while j < n and reach:
        if j in reach:
            reach.discard(j)
            c = s[j]
            if c == close:
                end = j + 1
            if c == "\\" and j + 1 < n and s[j + 1] in _PUNCT:
                reach.add(j + 2)
            if c not in banned:
                reach.add(j + 1)
        j += 1
    return end


def _definition(s: str, i: int) -> int:
    """After one definition at s[i] (cmark `cmark_parse_reference_inline`), or -1."""
    j = _label_end(s, i)
    if j < 0 or j >= len(s) or s[j] != ":":
        return -1
    j = _destination(s, _spnl(s, j + 1))
    if j < 0:
        return -1
    before_title = j
    k = _spnl(s, j)
    title_end = _title(s, k) if k != before_title else -1
    if title_end >= 0:
        end = _line_end(s, _skip_spaces(s, title_end))
        if end >= 0:
            return end
    return _line_end(s, _skip_spaces(s, before_title))


def definitions_end(s: str) -> int:
    """Rule 2: the length of the definitions at the start of paragraph text `s` (its
    lines without leading spaces and tabs, each ended by "\\n")."""
    i = 0
    while i < len(s) and s[i] == "[":
        j = _definition(s, i)
        if j <= i:
            break
        i = j
    return i


def _paragraph_text(state: Any, start: int, end: int, d8: bool) -> str:
    """cmark's content of a paragraph: each line from its first non-blank character,
    except that a lazy line keeps its indentation past the containers it reaches (D8;
    written as spaces: only whether a line starts with "[" matters)."""
    src = state.src
    lazy: dict[int, int] = state.env.get(_LAZY, {})
    parts = []
    for k in range(start, end):
        lead = 0
        if k > start and d8:
            if state.sCount[k] < 0:
                lead = lazy.get(k, 0)
            elif state.sCount[k] < state.blkIndent:
                lead = _outdented_indent(state, k)
        parts.append(" " * lead + src[state.bMarks[k] + state.tShift[k] : state.eMarks[k]] + "\n")
    return "".join(parts)


def _only_definitions(state: Any, start: int, end: int, d8: bool) -> bool:
    text = _paragraph_text(state, start, end, d8)
    return not text[definitions_end(text) :].strip(" \t\r\n")


# ---- container depths (D4, D5) ------------------------------------------------------


def _wrap_tokenize(
    tokenize: Callable[[Any, int, int], None], d9: bool
) -> Callable[[Any, int, int], None]:
    def tracking_tokenize(state: Any, start: int, end: int) -> None:
        stack: list[int] = state.env.setdefault(_STACK, [])
        kind = state.parentType
        stack.append(state.blkIndent if kind == "list" else _QUOTE)
        if d9 and kind == "blockquote":
            _real_columns(state, start, end)
        try:
            tokenize(state, start, end)
        finally:
            stack.pop()

    return tracking_tokenize


def _real_columns(state: Any, start: int, end: int) -> None:
    """D9: a block quote sets each of its lines' bsCount (the columns between the real
    line start and the line's new start, for tab stops) to the columns it consumed, so
    a quote inside a quote forgets the outer one's: count them from the real line start
    (plus the column of a tab right after ">" that the quote half consumed)."""
    src = state.src
    for k in range(start, end):
        if state.sCount[k] < 0:
            continue  # a lazy line: not rewritten
        begin = state.bMarks[k]
        column = 0
        for c in src[src.rfind("\n", 0, begin) + 1 : begin]:
            column = column + 4 - column % 4 if c == "\t" else column + 1
        if src.startswith("\t", begin) and src.startswith(">", begin - 1):
            column += 1
        state.bsCount[k] = column


def _outdented_indent(state: Any, line: int) -> int:
    """For a line indented less than the innermost container's content: its indentation
    from the content of the deepest container it reaches (cmark's `indent`), else -1."""
    columns: int = state.sCount[line]
    if columns < 0 or columns >= state.blkIndent:
        return -1
    base = 0
    for content in reversed(state.env.get(_STACK, ())):
        if content == _QUOTE:
            break
        if content <= columns:
            base = content
            break
    return columns - base


def _record_lazy(state: Any, line: int) -> None:
    """D8: the indentation a quote's lazy line keeps in cmark-gfm's paragraph text (read
    before the quote marks the line lazy, sCount -1)."""
    columns = state.sCount[line]
    if columns >= 0:
        outdented = _outdented_indent(state, line)
        lead = outdented if outdented >= 0 else columns - state.blkIndent
        state.env.setdefault(_LAZY, {})[line] = lead


def _wrap_terminator(name: str, rule: Rule, d4: bool, d5: bool, d8: bool) -> Rule:
    html7: Any = None
    if name == "html_block" and d5:
        from markdown_it.rules_block.html_block import HTML_SEQUENCES

        html7 = HTML_SEQUENCES[-1][0]
    record = d8 and name == "fence"  # the first rule a quote's lazy-line test asks

    def following_cmark(state: Any, start: int, end: int, silent: bool) -> bool:
        if record and silent and state.parentType == "blockquote":
            _record_lazy(state, start)
        # only silent checks of lazy lines differ (block starts are never outdented)
        if silent and (
            state.sCount[start] < state.blkIndent
            or (html7 is not None and state.parentType == "blockquote")
        ):
            if d4 and (state.sCount[start] < 0 or _outdented_indent(state, start) >= 4):
                return False  # D4 (a line an outer quote found lazy starts nothing)
            if html7 is not None and not state.is_code_block(start):
                pos = state.bMarks[start] + state.tShift[start]
                text = state.src[pos : state.eMarks[start]]
                if text.startswith("<") and html7.search(text):  # D5
                    return True
        return rule(state, start, end, silent)

    return following_cmark


# ---- block quotes (D6, D8) and empty list items (D7) ----------------------------------

# Over-approximations, searched once per parse (both start with a literal, so re finds
# candidates at C speed), that let the wrappers below step aside: a ">" after 4+ columns
# of blanks (D6: the last four characters before it are spaces, or one is a tab); a
# blank line of 2+ columns of blanks after a line ending in a list marker (D7: an
# item's content is at least 2 columns in).
_INDENTED_MARKER: Final = re.compile(
    r">(?:(?<=    >)|(?<=\t>)|(?<=\t >)|(?<=\t  >)|(?<=\t   >))"
)
_WIDE_BLANK_LINE: Final = re.compile(r"\n[ \t>]*(?:\t|  )[ \t>]*(?=\n|\Z)")


def _empty_item_line(src: str) -> bool:
    for found in _WIDE_BLANK_LINE.finditer(src):
        end = found.start()
        before = src[src.rfind("\n", 0, end) + 1 : end].rstrip(" \t")
        if before.endswith(("-", "+", "*")) or (
            before[-1:] in (".", ")") and before[-2:-1].isdigit()
        ):
            return True
    return False


def _holds(state: Any, fact: str) -> bool:
    """Whether the parsed text may hold D6's or D7's construct (found once per parse)."""
    known: dict[str, bool] = state.env.setdefault(_FACTS, {})
    found = known.get(fact)
    if found is None:
        if fact == "D6":
            found = _INDENTED_MARKER.search(state.src) is not None
        else:
            found = _empty_item_line(state.src)
        known[fact] = found
    return found


def _after_marker_empty(state: Any, line: int) -> bool:
    pos = state.bMarks[line] + state.tShift[line] + 1
    return not state.src[pos : state.eMarks[line]].strip(" \t")


def _quote_lines(state: Any, start: int, end: int) -> list[int]:
    """Walk the lines markdown-it's blockquote rule will take for the quote opened on
    `start`, as it does (same tests, same terminators), and return the `>` lines
    indented 4+ columns past the container's content (D6: not quote lines, so lazy
    lines or the quote's end), recording their indentation for D8."""
    demoted: list[int] = []
    terminators = state.md.block.ruler.getRules("blockquote")
    parent = state.parentType
    state.parentType = "blockquote"
    last_empty = _after_marker_empty(state, start)
    line = start + 1
    try:
        while line < end:
            pos = state.bMarks[line] + state.tShift[line]
            if pos >= state.eMarks[line]:
                break
            columns = state.sCount[line]
            quoted = state.src[pos] == ">" and columns >= state.blkIndent
            if quoted and columns - state.blkIndent < 4:
                last_empty = _after_marker_empty(state, line)
                line += 1
                continue
            if quoted:
                demoted.append(line)  # no terminator fires on a line indented 4+
                _record_lazy(state, line)
            if last_empty:
                break
            if not quoted and any(rule(state, line, end, True) for rule in terminators):
                break
            line += 1
    finally:
        state.parentType = parent
    return demoted


def _wrap_blockquote(rule: Rule) -> Rule:
    def blockquote_following_cmark(state: Any, start: int, end: int, silent: bool) -> bool:
        if silent or state.is_code_block(start):
            return rule(state, start, end, silent)
        if not _holds(state, "D6"):
            return rule(state, start, end, silent)
        demoted = _quote_lines(state, start, end)
        saved = [state.sCount[k] for k in demoted]
        for k in demoted:
            state.sCount[k] = -1  # read as a lazy line (D4 then declines every terminator)
        try:
            return rule(state, start, end, silent)
        finally:
            for k, columns in zip(demoted, saved, strict=True):
                state.sCount[k] = columns

    return blockquote_following_cmark


def _wrap_list(rule: Rule) -> Rule:
    def list_following_cmark(state: Any, start: int, end: int, silent: bool) -> bool:
        if silent or not _holds(state, "D7") or state.env.get(_PATCHED):
            return rule(state, start, end, silent)  # (an outer list may have patched it)
        is_empty: Callable[[int], bool] = state.isEmpty

        def empty_unless_item_continues(line: int) -> bool:
            if not is_empty(line):
                return False
            tokens = state.tokens
            item = line - 1
            if (
                not tokens
                or tokens[-1].type != "list_item_open"
                or tokens[-1].map[0] != item
                or state.bMarks[item] + state.tShift[item] < state.eMarks[item]
            ):
                return True  # not the list rule asking about an empty item
            # D7: markdown-it asks whether an empty item is followed by a blank line
            # (then it ends the item); cmark-gfm goes on while blank lines reach the
            # item's content column and ends it only at one that does not
            k = line
            while k < state.lineMax and is_empty(k):
                if state.sCount[k] < state.blkIndent:
                    return True
                k += 1
            return bool(k >= state.lineMax or state.sCount[k] < state.blkIndent)

        state.isEmpty = empty_unless_item_continues
        state.env[_PATCHED] = True
        try:
            return rule(state, start, end, silent)
        finally:
            del state.isEmpty
            state.env[_PATCHED] = False

    return list_following_cmark


# ---- paragraphs and setext headings (D1-D3) --------------------------------------------


def _blank_below_content(state: Any, line: int, end: int) -> bool:
    """Whether the blank line `line` that closed a paragraph is followed by more blank
    lines, one of them indented less than the item's content (cmark matches such a
    line to an item only while the item has a child)."""
    if line >= end or not state.isEmpty(line):
        return False
    line += 1
    while line < end and state.isEmpty(line):
        if state.sCount[line] < state.blkIndent:
            return True
        line += 1
    return False


def _no_child_yet(state: Any) -> bool:
    """Whether the tokens since the innermost list item opened are only paragraphs made
    of definitions (which cmark removes: the item has no child)."""
    tokens = state.tokens
    k = len(tokens) - 1
    while k >= 2 and tokens[k].type == "paragraph_close" and (tokens[k - 2].meta or {}).get(
        "definitions"
    ):
        k -= 3
    return k >= 0 and tokens[k].type == "list_item_open"


def _paragraph_rule(d2: bool, d3: bool, d8: bool, plain: list[Rule]) -> Rule:
    def paragraph(state: Any, start: int, end: int, silent: bool) -> bool:
        return _paragraph(state, start, d2, d3, d8, plain)

    return paragraph


def _paragraph(state: Any, start: int, d2: bool, d3: bool, d8: bool, plain: list[Rule]) -> bool:
    """markdown-it's lheading and paragraph rules in one, with D2 and D3. A line that
    reaches the container's content meets the terminators unwrapped (`plain`: D4, D5
    only concern outdented lines), so most paragraphs pay nothing for the wrappers."""
    if state.is_code_block(start):
        return False
    end = state.lineMax
    wrapped = state.md.block.ruler.getRules("paragraph")
    parent = state.parentType
    state.parentType = "paragraph"
    first = (d2 or d3) and state.src.startswith("[", state.bMarks[start] + state.tShift[start])
    underline_taken = False
    level = 0
    marker = ""
    line = start + 1
    while line < end and not state.isEmpty(line):
        if state.sCount[line] - state.blkIndent > 3:
            line += 1
            continue
        if state.sCount[line] >= state.blkIndent:
            pos = state.bMarks[line] + state.tShift[line]
            maximum = state.eMarks[line]
            if pos < maximum and state.src[pos] in "-=":
                marker = state.src[pos]
                after = state.skipSpaces(state.skipCharsStr(pos, marker))
                if after >= maximum:
                    if (
                        d2
                        and first
                        and not underline_taken
                        and _only_definitions(state, start, line, d8)
                    ):
                        underline_taken = True  # D2: the underline is paragraph text
                        line += 1
                        continue
                    level = 1 if marker == "=" else 2
                    break
        if state.sCount[line] < 0:
            line += 1
            continue
        terminate = False
        for rule in wrapped if state.sCount[line] < state.blkIndent else plain:
            if rule(state, line, end, True):
                terminate = True
                break
        if terminate:
            break
        line += 1
    state.parentType = parent
    content = state.getLines(start, line, state.blkIndent, False).strip()
    if level:
        state.line = line + 1
        token = state.push("heading_open", "h" + str(level), 1)
        token.markup = marker
        token.map = [start, state.line]
        token = state.push("inline", "", 0)
        token.content = content
        token.map = [start, state.line - 1]
        token.children = []
        token = state.push("heading_close", "h" + str(level), -1)
        token.markup = marker
        return True
    state.line = line
    definitions = first and not underline_taken and _only_definitions(state, start, line, d8)
    ends_item = (
        d3
        and definitions
        and parent == "list"
        and _blank_below_content(state, line, end)
        and _no_child_yet(state)
    )
    token = state.push("paragraph_open", "p", 1)
    token.map = [start, state.line]
    token.meta = {"definitions": definitions}
    token = state.push("inline", "", 0)
    token.content = content
    token.map = [start, state.line]
    token.children = []
    state.push("paragraph_close", "p", -1)
    if ends_item:  # D3: the list rule resets blkIndent after the item
        state.blkIndent = 1 << 30
    return True


DIFFERENCES: Final = frozenset({"D1", "D2", "D3", "D4", "D5", "D6", "D7", "D8", "D9"})


def install(md: Any, differences: Collection[str] = DIFFERENCES) -> None:
    """Make a MarkdownIt instance (preset "commonmark") follow the references where it
    differs from them: every difference of `differences` (tests leave one out to see
    which difference explains a document)."""
    ruler = md.block.ruler
    if "D1" in differences:
        ruler.disable("reference")
    d2, d3, d4, d5, d6, d7, d8, d9 = (f"D{k}" in differences for k in range(2, 10))
    if d2 or d3:
        plain = [r.fn for r in ruler.__rules__ if r.enabled and "paragraph" in r.alt]
        ruler.at("lheading", _paragraph_rule(d2, d3, d8, plain))
    if d4 or d5 or d8:
        for rule in ruler.__rules__:
            if rule.name in _TERMINATORS:
                rule.fn = _wrap_terminator(rule.name, rule.fn, d4, d5, d8)
    for rule in ruler.__rules__:
        if rule.name == "blockquote" and d6:
            rule.fn = _wrap_blockquote(rule.fn)
        if rule.name == "list" and d7:
            rule.fn = _wrap_list(rule.fn)
    ruler.__cache__ = None
    if d4 or d8 or d9:
        md.block.tokenize = _wrap_tokenize(md.block.tokenize, d9)
