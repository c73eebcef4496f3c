# Owns: deciding the fences of simple list items without markdown-it (the common way
# an agent writes a marker block inside a numbered step). From a cut (no container or
# leaf block open) it walks lines of these shapes only, else it gives up:
#   item line:  column 0, a bullet (-, +, *) or ordered (1-9 digits, "." or ")")
#               marker, 1-4 spaces, then plain text or a fence run (content offset c);
#   in-item:    indented k >= c spaces: k >= c+4 is anything (paragraph continuation
#               or indented code: neither opens a container, a fence or HTML); else
#               plain text or a fence run;
#   blank:      spaces and tabs only.
# "Plain" text starts with a character no block construct starts with (see `_PLAIN`),
# so it is paragraph text. A fence in an item (opener indent `ind` = k, or c on the item
# line) runs, exactly as markdown-it's fence rule inside a list item with blkIndent c,
# to the first line that is non-blank and indented < c (the item ends: unclosed), or a
# closing fence indented c..c+3 with a run of the same character at least as long and
# only spaces/tabs after it (closed), or the end of the text (unclosed). Its body is its
# lines with up to `ind` leading spaces removed (markdown-it's getLines).
#
# Must never: accept a line whose leading whitespace holds a tab (column arithmetic
# would differ), guess (any other shape returns None and a markdown-it zone decides),
# raise, or revisit a line (the walk is resumable, so a long list stays linear).
#
# Invariants:
#   Rule 1: `advance` returns either None (the walk is dead) or the blocks of every
#           fence opened in the walked lines, and it stops only between units (a line,
#           or a whole fence) and before any line it cannot decide, so the scanner may
#           resume at `pos` (its rules hold in any list context).
#   Rule 2: a line at column 0 is an item line or the walk dies: no lazy continuation,
#           no top-level paragraph, no quote, no HTML block is ever assumed.
from __future__ import annotations

import re
from typing import Final

from markertools.parse.lines import is_candidate

_ITEM: Final = re.compile(r"(?:[-+*]|[0-9]{1,9}[.)])( {1,4})(?=[^ \t\n])")
# A first character no block construct starts with (space, tab, ` ~ > - * _ + digits
# < # = [ and controls excluded), or one or two of * _ ` before a character that is
# neither the same nor whitespace (emphasis or code span, never a list marker,
# thematic break, fence or setext underline).
_PLAIN: Final = re.compile(
    r"[^\x00-\x20`~>\-*_+0-9<#=\[\x7f-\x9f]|\*{1,2}[^*\s]|_{1,2}[^_\s]|`{1,2}[^`\s]"
)
_LEAD: Final = re.compile(r"[ \t]*")
_RUNS: Final = {"`": re.compile("`+"), "~": re.compile("~+")}

# (opener line start, stripped info as written, body, closed) of a candidate fence
Found = tuple[int, str, str, bool]


class ListWalk:
    """A resumable hand parse of simple list items starting at a cut."""

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.n = len(text)
        self.start = start
        self.pos = start  # next unit starts here (a line start, or n)
        self.c = 0  # content offset of the open item; 0 before the first item line

    def advance(self, trigger: int) -> list[Found] | None:
        """Walk units past the one holding the line at `trigger`, then on while the
        lines keep the simple shapes; stop before the first line that does not (Rule 1).
        None when such a line comes at or before `trigger` (the walk is then dead)."""
        text, n = self.text, self.n
        pos, c = self.pos, self.c
        found: list[Found] = []
        lead, plain = _LEAD.match, _PLAIN.match
        while pos < n:
            le = text.find("\n", pos)
            if le < 0:
                le = n
            m = lead(text, pos, le)  # always matches (maybe empty)
            p = m.end() if m else pos
            if p == le:  # blank
                pos = le + 1
                continue
            k = p - pos
            if k == 0:  # Rule 2
                item = _ITEM.match(text, pos, le)
                if item is None:
                    break
                p = item.end()
                c_here = p - pos
            elif c == 0 or k < c or "\t" in text[pos:p]:
                break
            elif k >= c + 4:
                pos = le + 1
                continue
            else:
                c_here = c
            ch = text[p]
            if (ch == "`" or ch == "~") and text.startswith(ch * 3, p):
                end = self._fence(pos, p, le, c_here, found)
                if end < 0:
                    break
            elif plain(text, p, le) is not None:
                end = le + 1
            else:
                break
            pos, c = end, c_here
        if pos <= trigger and pos < n:
            return None
        self.pos, self.c = min(pos, n), c
        return found

    def _fence(self, ls: int, p: int, le: int, c: int, found: list[Found]) -> int:
        """The fence opened at `p` (line start `ls`) in an item of content offset `c`:
        record it when it is a candidate; return where the next unit starts, or -1."""
        text, n = self.text, self.n
        ch = text[p]
        run_end = _RUNS[ch].match(text, p, le)
        assert run_end is not None
        run = run_end.end() - p
        info = text[p + run : le]
        if ch == "`" and "`" in info:
            return -1  # not a fence: paragraph text starting with ``` (not plain)
        info = info.strip(" \t")
        want = is_candidate(info)
        ind = p - ls  # the opener's column: leading spaces removed from body lines
        parts: list[str] = []
        j = le + 1
        closed = False
        lead = _LEAD.match
        while j < n:
            e = text.find("\n", j)
            if e < 0:
                e = n
            m = lead(text, j, e)  # always matches (maybe empty)
            q = m.end() if m else j
            if "\t" in text[j:q]:
                return -1
            k = q - j
            if q < e:
                if k < c:
                    break  # the item ends, and the fence with it (unclosed)
                if k <= c + 3 and text[q] == ch:
                    close = _RUNS[ch].match(text, q, e)
                    assert close is not None
                    if close.end() - q >= run and not text[close.end() : e].strip(" \t"):
                        closed = True
                        j = e + 1
                        break
            if want:
                parts.append(text[j + min(k, ind) : e + 1])
            j = e + 1
        if want:
            found.append((ls, info, "".join(parts) if closed else "", closed))
        return min(j, n)
