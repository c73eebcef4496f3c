# Owns: the C-speed parts of extraction used by `blocks._Scanner`: the prefilter
# (could any fence in the text carry a kind or near-miss info string?), finding the
# fence-like lines (a run of 3+ backticks or tildes after at most a container-like
# prefix) with regular expressions that have literal prefixes, and the searches the
# scanner needs between them (lines that may open an HTML block or nest containers
# deeply, the first line indented less than w, the cuts that bound a zone); and
# `is_candidate`, the one test of a candidate info string (`lists` uses it too).
#
# Must never: classify a fence as a block (that is `blocks`'s job), miss a candidate
# in the prefilter, backtrack quadratically on any input, or raise.
#
# Invariants:
#   Rule 1: `fence_lines` lists, in order and once per line, every line whose first
#           non-container characters are a run of 3+ "`" or "~", except lines with a
#           container or 4+ column prefix that are not candidates (those can never
#           open a top-level fence; deep ones are found by `gap_risk`).
#   Rule 2: a column-0 fence line outside an open top-level fence or HTML block is a
#           top-level opener (it closes every container and interrupts paragraphs).
#   Rule 3: every text position is examined by each regex at most a constant number
#           of times (cut searches are bounded by the previous cut / next event).
from __future__ import annotations

import re
from typing import Final

from markertools.parse.nearmiss import ORDINARY, classify

# A fence line: (ls, fs, rs, le, ch, run, pkind, width, valid, blank, cand)
LS: Final = 0  # line start
FS: Final = 1  # fence run start
RS: Final = 2  # fence run end
LE: Final = 3  # line end
CH: Final = 4  # fence character
RUN: Final = 5  # fence run length
PK: Final = 6  # prefix kind
WIDTH: Final = 7  # prefix length
VALID: Final = 8  # a valid opener (no backtick in a backtick fence's info)
BLANK: Final = 9  # nothing but spaces/tabs after the run (closing-fence shaped)
CAND: Final = 10  # info string is a kind or a near miss
# prefix kinds: none, 1-3 spaces, other blank, container markers
COL0: Final = 0
IND: Final = 1
DEEP: Final = 2
CONT: Final = 3
FenceLine = tuple[int, int, int, int, str, int, int, int, bool, bool, bool]

_PREFIX = re.compile(r"[ \t>*+\-.)0-9]*")
_MARKER = re.compile(r"[>*+\-0-9]")
DEEP_COLUMNS: Final[int] = 16  # container prefixes this wide may reach markdown-it's nesting limit
_DEEP = rf"[ \t>*+\-.)0-9]*\t|[ >*+\-.)0-9]{{{DEEP_COLUMNS}}}"
# the lookahead is a cheap guard: most lines start with a character none of these can
_GAP_RISK = re.compile(rf"\n(?=[ \t<>*+\-.)0-9])(?: {{0,3}}<|{_DEEP})")
_GAP_RISK_FIRST = re.compile(rf" {{0,3}}<|{_DEEP}")
GAP_LINE: Final = _GAP_RISK  # for callers that pre-check a gap in C before `gap_risk`
_DEEP_LINE = re.compile(rf"\n(?=[ \t>*+\-.)0-9])(?:{_DEEP})")
_VIOLATING = {w: re.compile(rf"\n(?! {{{w}}}|[ \t]*(?:\n|\Z))") for w in (1, 2, 3)}
_BLANK_CUT = re.compile(r"\n[ \t]*\n(?=[^ \t\n])")


# Prefilter (EXT-6): a candidate's info string is at least 7 characters long (names
# are 9-17 ASCII characters, near misses are within distance 2 after removing edge
# punctuation, folding ASCII case and `_`), so only fence runs followed by 7+
# characters can start a candidate. Over-matching is fine; missing one is not.
# Both patterns fail or match in O(1) at each position inside a long run (no quadratic
# backtracking): the backtick one may start on the run's last three backticks; tilde
# lines (rare) are all taken whole, since a tilde fence's info may start with "~".
_MAYBE_CAND = {
    "`": re.compile(r"```[ \t]*+[^\n \t`][^\n]{6,}"),
    "~": re.compile(r"~~~[^\n]{7,}"),
}
_LINE_TAIL = {"`": re.compile(r"```[^\n]*"), "~": re.compile(r"~~~[^\n]*")}
_ordinary_tails: set[str] = set()
_TAILS_LIMIT: Final[int] = 4096
_FIRST_WINDOW: Final[int] = 16_384


def is_candidate(info: str) -> bool:
    """Whether a stripped info string is a kind name, an alias or a near miss (all are
    at least 7 characters long, so shorter ones skip `classify`)."""
    return len(info) > 6 and classify(info.replace("\0", "\ufffd")) != ORDINARY


TailFacts = tuple[int, bool, bool, bool]  # (run length, valid, blank, candidate)
_tail_facts: dict[str, TailFacts] = {}


def _facts(tail: str, ch: str) -> TailFacts:
    """What the scanner needs from a fence run and the rest of its line (memoised)."""
    known = _tail_facts.get(tail)
    if known is not None:
        return known
    rest = tail.lstrip(ch)
    valid = ch == "~" or "`" not in rest
    info = rest.strip(" \t")
    cand = valid and is_candidate(info)
    facts = (len(tail) - len(rest), valid, not info, cand)
    if len(tail) <= 64:
        if len(_tail_facts) >= _TAILS_LIMIT:
            _tail_facts.clear()
        _tail_facts[tail] = facts
    return facts


def may_have_candidates(text: str) -> bool:
    """False only when no fence run in `text` is followed by a kind-like info string.
    Scans windows that grow 4x, ending at line breaks (a tail never spans a line), so a
    text with markers usually pays for only a prefix of the scan."""
    n = len(text)
    # one character is found with memchr (far cheaper than any 3-character search), and
    # most answers have no tilde at all: then the tilde pass is skipped
    has_tilde = "~" in text
    start, size = 0, _FIRST_WINDOW
    while start < n:
        end = text.find("\n", start + size)
        if end < 0:
            end = n
        for ch, pattern in _MAYBE_CAND.items():
            if ch == "~" and not has_tilde:
                continue
            tails = set(pattern.findall(text, start, end))
            tails.difference_update(_ordinary_tails)
            for tail in tails:
                if _facts(tail, ch)[3]:  # the candidate fact
                    return True
                if len(_ordinary_tails) >= _TAILS_LIMIT:
                    _ordinary_tails.clear()
                if len(tail) <= 80:
                    _ordinary_tails.add(tail)
        start, size = end, size * 4
    return False


def _collect(text: str, ch: str, out: list[FenceLine]) -> None:
    """Rule 1 for one fence character. Lines whose prefix holds container markers or
    4+ columns of indentation are kept only when they are candidates: the scanner
    needs nothing else from them (deep prefixes are found by `gap_risk`)."""
    rfind = text.rfind
    prefix_ok = _PREFIX.fullmatch
    append = out.append
    known = _tail_facts.get
    for match in _LINE_TAIL[ch].finditer(text):
        fs, le = match.span()
        if fs == 0 or text[fs - 1] == "\n":
            tail = match.group()
            run, valid, blank, cand = known(tail) or _facts(tail, ch)
            append((fs, fs, fs + run, le, ch, run, COL0, 0, valid, blank, cand))
            continue
        ls = rfind("\n", 0, fs) + 1
        width = fs - ls
        if width <= 3 and text.startswith("   "[:width], ls):
            pkind = IND
        elif prefix_ok(text, ls, fs):
            pkind = DEEP if not text[ls:fs].strip(" \t") else CONT
        else:
            continue
        tail = match.group()
        run, valid, blank, cand = known(tail) or _facts(tail, ch)
        if pkind >= DEEP and not cand:
            continue
        append((ls, fs, fs + run, le, ch, run, pkind, width, valid, blank, cand))


def fence_lines(text: str) -> list[FenceLine]:
    """Rule 1: the fence-like lines of `text` (normalised) that matter, in order."""
    out: list[FenceLine] = []
    _collect(text, "`", out)
    if "~" not in text:  # memchr: far cheaper than the tilde regex pass
        return out
    tildes: list[FenceLine] = []
    _collect(text, "~", tildes)  # (a regex pass is faster than `"~~~" in text` here)
    if tildes:
        out.extend(tildes)
        out.sort()
    return out


def is_deep_prefix(text: str, ls: int) -> bool:
    """A container prefix wide enough to reach markdown-it's nesting limit."""
    match = _PREFIX.match(text, ls)
    prefix = match.group() if match else ""
    columns = 0
    for c in prefix:
        columns = columns + 4 - columns % 4 if c == "\t" else columns + 1
    return columns >= DEEP_COLUMNS and _MARKER.search(prefix) is not None


def gap_risk(text: str, start: int, end: int) -> int:
    """Line start of the first line in [start, end) that could open a top-level HTML
    block or nest containers deeply, else -1. `start` and `end` are line starts."""
    pos = start
    if pos == 0:
        first = _GAP_RISK_FIRST.match(text, 0, end)
        if first is not None and (
            first.group().lstrip(" ").startswith("<") or is_deep_prefix(text, 0)
        ):
            return 0
        pos = 1
    while pos < end:
        found = _GAP_RISK.search(text, pos - 1, end)
        if found is None:
            return -1
        line = found.start() + 1
        if text.startswith("<", found.end() - 1) or is_deep_prefix(text, line):
            return line
        pos = line + 1
    return -1


def deep_line_in(text: str, start: int, end: int) -> bool:
    """Whether a line in (start, end) has a deep container prefix (start = a line end)."""
    pos = start
    while pos < end:
        found = _DEEP_LINE.search(text, pos, end)
        if found is None:
            return False
        if is_deep_prefix(text, found.start() + 1):
            return True
        pos = found.start() + 1
    return False


class Violations:
    """First non-blank line with fewer than w leading spaces after a position, per w;
    memoised so each w scans the text at most once (Rule 3)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.memo: dict[int, tuple[int, int]] = {}

    def after(self, w: int, pos: int) -> int:
        known = self.memo.get(w)
        if known is not None and known[0] <= pos < known[1]:
            return known[1]
        found = _VIOLATING[w].search(self.text, pos)
        hit = found.start() + 1 if found else len(self.text)
        self.memo[w] = (pos, hit)
        return hit


def blank_cut_before(text: str, floor: int, t: int) -> int:
    """The latest line start c in [floor, t] preceded by an empty line whose first
    character is not blank (a place where every container has closed), else floor."""
    end = t
    lower = max(floor - 2, 0)
    while True:
        p = text.rfind("\n\n", lower, end)
        if p < 0:
            return floor
        c = p + 2
        if c >= floor and c < len(text) and text[c] not in " \t\n":
            return c
        end = p + 1


def next_cut(text: str, pos: int, col0_cut: int) -> int:
    """The first cut after position `pos` (a line end): an empty or blank line followed
    by a non-blank column-0 line, or `col0_cut` (a column-0 fence line), if earlier."""
    found = _BLANK_CUT.search(text, pos, min(col0_cut + 1, len(text)))
    if found is not None and found.end() < col0_cut:
        return found.end()
    return col0_cut
