# Owns: extraction (docs/rules.md EXT): text -> the marker blocks a CommonMark renderer shows,
# in order, with kind, 1-based opening line, body and whether the block closed.
# cmark-gfm is the reference; markdown-it-py ("commonmark") with the overrides of
# `cmarkrules` answers as it does (docs/parse.md, "Where the references differ"), and
# this module answers exactly as that parser, but touches it only for the parts of the
# text it cannot prove simple.
#
# How (the argument the agreement tests check):
#   1. A C-speed prefilter (`may_have_candidates`): no fence run followed by a kind or
#      near-miss info string ("candidate") -> no blocks, no markdown parse (EXT-6).
#      Otherwise `fence_lines` lists the fence-like lines that matter.
#   2. A scanner walks the fence lines in order. A valid fence at column 0 that is not
#      inside an open top-level fence or HTML block is a top-level opener: it closes
#      every list item and block quote (it is not a paragraph continuation) and
#      interrupts a paragraph. Its body runs to the first closing fence indented at
#      most 3 spaces, or is unclosed at the end of the text (EXT-3).
#   3. A candidate whose container prefix holds ">" is quoted (a ">" always opens a
#      block quote; a fence is never a lazy line) or no fence at all: no block.
#   4. Everything else that could change that picture is decided from a "cut" where
#      no container or leaf block is open (start of text, after a top-level fence, or
#      a non-blank column-0 line after an empty line): a candidate not at column 0 (in
#      a list, indented), a fence indented 1-3 spaces that might be a top-level opener
#      (unless it provably closes the same way whether or not it sits in a list item),
#      a line that may open an HTML block, a container prefix deep enough to reach
#      markdown-it's nesting limit. First by hand when the lines from the cut are
#      simple list items (`lists.ListWalk`: exact for those shapes, resumable,
#      and it stops before any line it cannot decide); else as a "zone" parsed by
#      markdown-it, which ends at the next cut, is extended while markdown-it shows a
#      top-level fence or HTML block running into its end, and runs to the end of the
#      text if the nesting limit was approached. A zone or a new walk redoes the blocks
#      an earlier walk decided after its start (`_drop_from`).
#   The full path (`full=True`) is one zone covering the whole text.
#
# Must never: raise on any `str`, take more than linear time, import markdown_it at
# module import time, or return a fence inside a block quote, HTML block, indented
# code or another fence.
#
# Invariants:
#   Rule 1: line endings CRLF, CR and LF each end a line; NUL reads as U+FFFD (exactly
#           markdown-it's normalisation), so line numbers and bodies match it.
#   Rule 2: the fast and the full path return equal results on every input.
from __future__ import annotations

from bisect import bisect_left

import attrs

from markertools.parse.lines import (
    BLANK,
    CAND,
    CH,
    COL0,
    CONT,
    GAP_LINE,
    IND,
    LE,
    LS,
    PK,
    RS,
    RUN,
    VALID,
    WIDTH,
    FenceLine,
    Violations,
    blank_cut_before,
    deep_line_in,
    fence_lines,
    gap_risk,
    is_deep_prefix,
    may_have_candidates,
    next_cut,
)
from markertools.parse.lists import ListWalk
from markertools.parse.nearmiss import classify


@attrs.frozen
class RawBlock:
    """One fenced block whose info string is a kind name, an alias or a near miss."""

    line: int  # 1-based line of the opening fence
    info: str  # the info string as written (stripped of spaces and tabs)
    kind: str | None  # the name as written when it is a kind name or alias, else None
    suggestion: str | None  # near miss: the name it resembles (EXT-5)
    body: str  # "" when the block is unclosed
    closed: bool


def normalize_text(text: str) -> str:
    """Rule 1, line endings (NUL is replaced where it is read: info strings, bodies,
    markdown-it regions; it never changes block structure)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _no_nul(text: str) -> str:
    return text.replace("\0", "\ufffd")


class _Lines:
    """1-based line number of a position; incremental, so a pass stays linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, pos: int) -> int:
        if pos >= self.pos:
            self.line += self.text.count("\n", self.pos, pos)
        else:
            self.line -= self.text.count("\n", pos, self.pos)
        self.pos = pos
        return self.line


def _block(info: str, line: int, body: str, closed: bool) -> RawBlock | None:
    info = _no_nul(info)
    written, suggestion = classify(info)
    if written is None and suggestion is None:
        return None
    return RawBlock(line, info, written, suggestion, _no_nul(body) if closed else "", closed)


def extract_blocks(text: str, *, full: bool = False) -> tuple[RawBlock, ...]:
    """The marker blocks of one turn's text, in order of appearance (EXT-1..6)."""
    text = normalize_text(text)
    if not full:
        try:
            return extract_fast(text)
        except Exception:  # pragma: no cover - defensive: the full path is the reference
            pass
    return tuple(_Scanner(text, []).zone_blocks(0, len(text)))


def extract_fast(text: str) -> tuple[RawBlock, ...]:
    """The fast path on normalised text (tests call it directly, without the guard)."""
    if not may_have_candidates(text):
        return ()
    lines = fence_lines(text)
    last_cand = len(lines) - 1  # the scanner stops after the last candidate
    while last_cand >= 0 and not lines[last_cand][CAND]:
        last_cand -= 1
    if last_cand < 0:
        return ()
    return tuple(_Scanner(text, lines).run(last_cand))


class _Scanner:
    def __init__(self, text: str, lines: list[FenceLine]) -> None:
        self.text = text
        self.n = len(text)
        self.fl = lines
        self._starts: list[int] | None = None  # built on the first zone
        self._col0_cuts: list[int] | None = None
        self.lines = _Lines(text)
        self.violations = Violations(text)
        self.out: list[RawBlock] = []
        self.out_pos: list[int] = []  # where each block of `out` was decided (a line start)
        self.last_cut = 0
        self._zone_end = 0
        self._walk: ListWalk | None = None  # the live hand parse of simple list items

    def run(self, last_cand: int) -> list[RawBlock]:
        """Decide every fence line up to index `last_cand` (the last candidate)."""
        fl = self.fl
        text = self.text
        n = self.n
        count = len(fl)
        gap_line = GAP_LINE.search  # the C pre-check of `gap_risk` (its first search)
        scan_from = 0
        k = 0
        while k <= last_cand:
            f = fl[k]
            ls, fs, _, le, ch, run, pkind, _, valid, _, cand = f
            if scan_from < ls and (scan_from == 0 or gap_line(text, scan_from - 1, ls)):
                risk = gap_risk(text, scan_from, ls)
                if risk >= 0:
                    k, scan_from = self.decide(risk)
                    continue
            if pkind == COL0 and valid:
                j = k + 1
                while j < count:
                    g = fl[j]
                    if g[BLANK] and g[PK] <= IND and g[CH] == ch and g[RUN] >= run:
                        break
                    j += 1
                closer = fl[j] if j < count else None
                if cand:
                    self._record_col0(f, closer)
                if closer is None:
                    break
                self.last_cut = scan_from = min(closer[LE] + 1, n)
                k = j + 1
            elif cand:
                if pkind == CONT and ">" in text[ls:fs] and not is_deep_prefix(text, ls):
                    # Quoted (or not a fence at all): a ">" in a container prefix opens a
                    # block quote, never lazily; its fence ends with the quote. No block.
                    scan_from = min(le + 1, n)
                    k += 1
                    continue
                k, scan_from = self.decide(ls)
            elif pkind == IND and valid:
                j = self._accept_indented(k)
                if j < 0:
                    k, scan_from = self.decide(ls)
                else:
                    scan_from = min(fl[j][LE] + 1, n)
                    k = j + 1
            else:
                scan_from = min(le + 1, n)
                k += 1
        return self.out

    # ---- the simple cases -----------------------------------------------------

    def _record_col0(self, f: FenceLine, closer: FenceLine | None) -> None:
        info = self.text[f[RS] : f[LE]].strip(" \t")
        body = self.text[min(f[LE] + 1, self.n) : closer[LS]] if closer else ""
        self._add(info, self.lines.at(f[LS]), body, closer is not None, f[LS])

    def _add(self, info: str, line: int, body: str, closed: bool, decided_at: int) -> None:
        """Record the block of a fence whose info string is a candidate (`_block`)."""
        block = _block(info, line, body, closed)
        if block is not None:
            self.out.append(block)
            self.out_pos.append(decided_at)

    def _accept_indented(self, k: int) -> int:
        """A valid fence N indented w = 1..3 spaces, not a candidate. It is a top-level
        opener, or it sits in a list item (whose content offset is <= w). Accept it
        (return its closer's index) when both readings agree: a closing fence C
        indented <= 3 comes before any non-blank line indented less than w (so a list
        item would still be open at C, and C closes N either way), with no candidate
        and no deep container prefix in between. Else -1 (a zone decides)."""
        n_line = self.fl[k]
        ch, run = n_line[CH], n_line[RUN]
        limit = self.violations.after(n_line[WIDTH], n_line[LE])
        for j in range(k + 1, len(self.fl)):
            g = self.fl[j]
            if g[LS] >= limit or g[CAND]:
                return -1
            if g[BLANK] and g[PK] <= IND and g[CH] == ch and g[RUN] >= run:
                if deep_line_in(self.text, n_line[LE], g[LS]):
                    return -1
                return j
        return -1

    # ---- simple list items, then zones ------------------------------------------

    def decide(self, trigger: int) -> tuple[int, int]:
        """The line at `trigger` needs more than the fence lines: walk simple list items
        by hand (`lists`) when the text around it has their shape, else parse a
        zone with markdown-it. Returns (index of the next fence line, scan position)."""
        end = self._walk_to(trigger)
        if end < 0:
            k = self.zone(trigger)
            return k, self.last_cut
        return self._index_at(end), end

    def _walk_to(self, trigger: int) -> int:
        """Advance the live walk past `trigger` (resumed when no cut lies between, so a
        long list is walked once), or start one at the cut before it; -1 if it dies."""
        walk = self._walk
        if walk is not None and self.last_cut <= walk.pos <= trigger:
            start = blank_cut_before(self.text, walk.pos, trigger)
            if start > walk.pos:
                walk = None
        else:
            walk = None
            start = blank_cut_before(self.text, self.last_cut, trigger)
        if walk is None:
            self._drop_from(start)
            walk = ListWalk(self.text, start)
        found = walk.advance(trigger)
        if found is None:
            self._walk = None
            return -1
        self._walk = walk
        for ls, info, body, closed in found:
            self._add(info, self.lines.at(ls), body, closed, ls)
        return walk.pos

    def _drop_from(self, start: int) -> None:
        """Forget blocks decided at or after `start` (a zone or a new walk redoes them)."""
        while self.out_pos and self.out_pos[-1] >= start:
            self.out_pos.pop()
            self.out.pop()

    def _index_at(self, pos: int) -> int:
        if self._starts is None:
            self._starts = [f[LS] for f in self.fl]
        return bisect_left(self._starts, pos)

    # ---- zones -----------------------------------------------------------------

    def zone(self, trigger: int) -> int:
        """Parse the zone around the line starting at `trigger` with markdown-it, record
        its blocks, and return the index of the first fence line after it (the zone
        end becomes the last cut)."""
        start = blank_cut_before(self.text, self.last_cut, trigger)
        self._drop_from(start)
        trigger_end = self.text.find("\n", trigger)
        end = self._cut_after(self.n if trigger_end < 0 else trigger_end)
        self.zone_blocks(start, end)
        self.last_cut = self._zone_end
        self._walk = None
        return self._index_at(self._zone_end)

    def _cut_after(self, pos: int) -> int:
        if self._col0_cuts is None:
            self._col0_cuts = [f[LS] for f in self.fl if f[PK] == COL0 and f[VALID]]
        cuts = self._col0_cuts
        i = bisect_left(cuts, pos + 1)
        col0 = cuts[i] if i < len(cuts) else self.n
        return next_cut(self.text, pos, col0)

    def zone_blocks(self, start: int, end: int) -> list[RawBlock]:
        from markertools.parse.commonmark import parse_region

        while True:
            result = parse_region(_no_nul(self.text[start:end]))
            if end >= self.n or (result.safe_end and not result.nesting_limit):
                break
            if result.nesting_limit:
                end = self.n
            else:
                end = self._cut_after(max(end, start + 2 * (end - start)) - 1)
        self._zone_end = end
        first_line = self.lines.at(start)
        for fence in result.fences:
            info = fence.info.strip(" \t")
            self._add(info, first_line + fence.line, fence.body, fence.closed, start)
        return self.out
