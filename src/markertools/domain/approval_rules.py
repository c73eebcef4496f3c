# Owns: the approval rule matcher (APR-2, docs/approvals.md "Rules") as pure functions:
# which words a command runs when it is a plain command (`command_words`), every simple
# command a shell could run from it (`command_segments`), where a changed path lies in
# the task's directory (`relative_inside`), the path globs (`glob_match`), whether one
# rule matches a request (`rule_matches`), the first rule that answers a request
# (`first_match`), the deny rule that covers it (`deny_covering`), the prefix that
# `--remember` records (`remember_prefix`) and what a rule may hold (`check_rule`).
# Security-critical: mutation-tested (scripts/mutation.py "approval_rules").
#
# Must never: let an allow rule match a command that is not plain - an argv element or
# a shell script (`sh -c SCRIPT`) holding `;`, `&`, `|`, a backquote, `$(`, `<`, `>`,
# `(`, `)`, a line break or a NUL - nor a changed path outside the task's directory; raise for
# any request or rule; take time beyond linear in the sizes (bounded by the limits of
# markertools.domain.approvals) times the pattern's length.
#
# Invariants:
#   Rule 1: an allow prefix P matches exactly when `command_words(argv)` is not None and
#           starts with P (element for element, exact strings: "uv" is not "/usr/bin/uv").
#   Rule 2: a deny prefix P matches when ANY segment of `command_segments(argv)` starts
#           with P, after leading NAME=VALUE words, transparent wrappers (env, sudo,
#           nohup, ...) and nested `SHELL -c` - it reads the command as broadly as a shell
#           could run it (quotes dropped, so `"$(rm ...)"` counts), so a deny is never
#           dodged by `true; rm ...`. Over-matching a deny is the safe side.
#   Rule 3: an allow glob matches a file change only when every changed path lies inside
#           the task's directory (after normalising `.` and `..`) and matches; a deny glob
#           when any path inside it matches. No directory (root None): no glob matches.
#   Rule 4: `first_match` tries rules in (position, id) order; the first that matches
#           answers. A kind-only rule matches every request of its kind.
from __future__ import annotations

import itertools
import operator
import posixpath
import shlex
from collections.abc import Iterable, Sequence
from typing import Final

from markertools._root import InvalidArgument
from markertools.domain.approvals import (
    MAX_GLOB_CHARS,
    ApprovalRequest,
    ApprovalRule,
    check_rule_fields,
)

SHELLS: Final[frozenset[str]] = frozenset(
    {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"}
)
# any of these in an argv element or a shell script: not a plain command (Rule 1)
SHELL_SYNTAX: Final[tuple[str, ...]] = (
    ";", "&", "|", "`", "$(", "<", ">", "(", ")", "\n", "\r", "\x00"
)  # fmt: skip
_PUNCTUATION: Final[str] = ";&|<>()"
# words that run the rest of their segment as a command (Rule 2)
WRAPPERS: Final[frozenset[str]] = frozenset(
    {"env", "command", "exec", "nohup", "time", "nice", "sudo", "doas", "builtin", "xargs"}
)


def is_plain(text: str) -> bool:
    """No shell syntax that could run a second command or redirect (Rule 1)."""
    return not any(token in text for token in SHELL_SYNTAX)


def script_index(argv: Sequence[str]) -> int | None:
    """Where the script of a shell run as `SHELL [-flags] -c SCRIPT` is in `argv` (flags
    may be combined: `bash -lc`), else None. Only the shell's basename counts (`/bin/sh`
    is `sh`)."""
    if not argv or posixpath.basename(argv[0]) not in SHELLS:
        return None
    index, with_c = 1, False
    while index < len(argv) and argv[index].startswith("-") and argv[index] not in ("-", "--"):
        if not argv[index].startswith("--") and "c" in argv[index][1:]:
            with_c = True
        index += 1
    return index if with_c and index < len(argv) else None


def shell_script(argv: Sequence[str]) -> str | None:
    """The script of `SHELL [-flags] -c SCRIPT` (`script_index`), else None."""
    index = script_index(argv)
    return None if index is None else argv[index]


def command_words(argv: Sequence[str]) -> tuple[str, ...] | None:
    """The words a plain command runs (Rule 1): the argv itself when no element holds
    shell syntax; for `SHELL -c SCRIPT` (nothing after the script) the script's words
    when the script is plain and lexes; None otherwise."""
    if not argv or not all(is_plain(word) for word in argv):
        return None
    index = script_index(argv)
    if index is None:
        return tuple(argv)
    if index != len(argv) - 1:
        return None  # positional parameters after the script: not a plain command
    try:
        words = tuple(shlex.split(argv[index]))
    except ValueError:  # an unbalanced quote
        return None
    return words or None


def _lex(text: str) -> list[str]:
    """Shell tokens of `text` for a deny (Rule 2), operators as their own tokens; never
    raises. Quotes are dropped first, so a command substitution inside double quotes
    (`echo "$(rm -rf /)"`) is split like any other: a deny may over-match a quoted
    string, never miss a command."""
    for quote in ("'", '"'):
        text = text.replace(quote, " ")
    for separator in ("`", "\r", "\n"):  # `$(` splits at its `(`, a punctuation char
        text = text.replace(separator, " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # a trailing backslash: split on whitespace and operators instead
        spaced = "".join(f" {ch} " if ch in _PUNCTUATION else ch for ch in text)
        return spaced.split()


def _segments_of(tokens: Iterable[str]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    current: list[str] = []
    for token in tokens:
        if all(ch in _PUNCTUATION for ch in token):
            if current:
                found.append(tuple(current))
            current = []
        else:
            current.append(token)
    if current:
        found.append(tuple(current))
    return found


def command_segments(argv: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """Every simple command a shell could run from `argv` (Rule 2): the argv itself, then
    the segments of its elements joined as one shell line - a `SHELL -c SCRIPT` reads as
    `SHELL -c` and the script's segments (`_unwrapped` takes `SHELL -c` off), an argv a
    careless engine split from a shell line reads as that line."""
    return (tuple(argv), *_segments_of(_lex(" ".join(argv))))


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.isidentifier()


def _unwrapped(segment: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The segment, and what it runs once leading NAME=VALUE words, wrappers (with their
    dash options) and `SHELL -c` are taken off, step by step."""
    forms = [segment]
    rest = list(segment)
    while rest:
        script = script_index(rest)
        if script is not None:
            del rest[:script]
        elif _is_assignment(rest[0]):
            rest.pop(0)
        elif posixpath.basename(rest[0]) in WRAPPERS:
            rest.pop(0)
            while rest and (rest[0].startswith("-") or _is_assignment(rest[0])):
                rest.pop(0)
        else:
            break
        if rest:
            forms.append(tuple(rest))
    return forms


def starts_with(words: Sequence[str], prefix: Sequence[str]) -> bool:
    """`words` begins with every element of `prefix`, in order (an empty prefix never
    matches: a rule names at least one word)."""
    return 0 < len(prefix) <= len(words) and tuple(words[: len(prefix)]) == tuple(prefix)


def allow_prefix_matches(prefix: Sequence[str], argv: Sequence[str]) -> bool:
    """Rule 1."""
    words = command_words(argv)
    return words is not None and starts_with(words, prefix)


def deny_prefix_matches(prefix: Sequence[str], argv: Sequence[str]) -> bool:
    """Rule 2."""
    return any(
        starts_with(form, prefix)
        for segment in command_segments(argv)
        for form in _unwrapped(segment)
    )


def relative_inside(path: str, root: str | None) -> str | None:
    """`path` (absolute, or relative to `root`) as a POSIX path relative to `root` when it
    lies strictly inside it after normalising `.` and `..`; None when it does not, when
    `root` is not an absolute path, or when either holds a NUL (Rule 3)."""
    if root is None or not root.startswith("/") or "\x00" in path or "\x00" in root:
        return None
    base = posixpath.normpath(root)
    if base.startswith("//"):
        base = "/" + base.lstrip("/")
    full = posixpath.normpath(posixpath.join(base, path))
    lead = base.rstrip("/") + "/"
    if not full.startswith(lead) or full.startswith("//"):
        return None
    rel = full[len(lead) :]
    return rel or None


def _segment_match(pattern: str, name: str) -> bool:
    """fnmatch-style on one path segment: `*` any run of characters, `?` one character,
    everything else literal. `row[j]`: the pattern so far matches name[:j]."""
    row = [True] + [False] * len(name)
    for p in pattern:
        if p == "*":
            row = list(itertools.accumulate(row, operator.or_))
        else:
            row = [False] + [row[j] and p in ("?", ch) for j, ch in enumerate(name)]
    return row[-1]


def glob_match(pattern: str, rel: str) -> bool:
    """A path glob relative to the task's directory (Rule 3): segments split at `/`;
    `**` matches any number of segments (none included), other segments match one
    segment with `*` and `?`. `rel` is a normalised relative path (`relative_inside`)."""
    if not pattern or not rel:
        return False
    names = rel.split("/")
    reach = [True] + [False] * len(names)  # the pattern so far matches names[:j]
    for pat in pattern.split("/"):
        if pat == "**":
            reach = list(itertools.accumulate(reach, operator.or_))
        else:
            reach = [False] + [reach[j] and _segment_match(pat, n) for j, n in enumerate(names)]
    return reach[-1]


def check_glob(pattern: str) -> str | None:
    """Why `pattern` cannot be a rule's path glob, or None: it must be relative to the
    task's directory, without `.`, `..` or empty segments."""
    if not pattern or len(pattern) > MAX_GLOB_CHARS:
        return f"a path glob has 1 to {MAX_GLOB_CHARS} characters"
    if pattern.startswith("/"):
        return "a path glob is relative to the task's directory (no leading /)"
    if any(segment in ("", ".", "..") for segment in pattern.split("/")):
        return "a path glob has no empty, . or .. segment"
    return None


def check_rule(rule: ApprovalRule) -> None:
    """What a stored rule may hold: the plain fields (`check_rule_fields`), a prefix of
    plain words (no shell syntax: such a prefix could never match, Rule 1), a glob of
    `check_glob`. ValueError naming the problem otherwise."""
    check_rule_fields(rule)
    if rule.prefix is not None:
        bad = [word for word in rule.prefix if not is_plain(word) or not word.strip()]
        if bad:
            raise InvalidArgument(f"rule prefix: {bad[0]!r} holds shell syntax or is blank")
    if rule.path_glob is not None:
        problem = check_glob(rule.path_glob)
        if problem is not None:
            raise InvalidArgument(f"rule path: {problem}")


def rule_matches(rule: ApprovalRule, request: ApprovalRequest, root: str | None) -> bool:
    """Whether `rule` matches `request` (Rules 1-4); `root` is the task's directory."""
    if rule.kind is not None and rule.kind != request.kind:
        return False
    if rule.prefix is not None:
        if request.kind != "command" or not request.command:
            return False
        if rule.action == "allow":
            return allow_prefix_matches(rule.prefix, request.command)
        return deny_prefix_matches(rule.prefix, request.command)
    if rule.path_glob is not None:
        if request.kind != "file_change" or not request.paths:
            return False
        inside = [relative_inside(p, root) for p in request.paths]
        hits = [r is not None and glob_match(rule.path_glob, r) for r in inside]
        return all(hits) if rule.action == "allow" else any(hits)
    return rule.kind is not None


def ordered(rules: Iterable[ApprovalRule]) -> list[ApprovalRule]:
    """Rules in the order they are tried (Rule 4)."""
    return sorted(rules, key=lambda r: (r.position, r.id))


def first_match(
    rules: Iterable[ApprovalRule], request: ApprovalRequest, root: str | None
) -> ApprovalRule | None:
    """The rule that answers `request` (Rule 4): the first of the project's rules that
    matches it, or None (someone is asked). Rules of other projects never match."""
    for rule in ordered(rules):
        if rule.project_id == request.project_id and rule_matches(rule, request, root):
            return rule
    return None


def deny_covering(
    rules: Iterable[ApprovalRule], request: ApprovalRequest, root: str | None
) -> ApprovalRule | None:
    """The first deny rule of the request's project that matches it: no answer may then
    approve the request (a deny rule is final, APR-2 / APR-3)."""
    for rule in ordered(rules):
        if (
            rule.action == "deny"
            and rule.project_id == request.project_id
            and rule_matches(rule, request, root)
        ):
            return rule
    return None


def remember_prefix(request: ApprovalRequest) -> tuple[str, ...] | None:
    """The allow prefix `approvals approve --remember` records for a command request: its
    plain words (a shell wrapper's script words); None when it is no command or not
    plain (an allow prefix could never match it)."""
    if request.kind != "command" or not request.command:
        return None
    return command_words(request.command)
