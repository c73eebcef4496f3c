#!/usr/bin/env python3
"""Check that every rule in docs/rules.md is named by a test.

A rule is declared in docs/rules.md as an anchor line followed by its heading:

    <a id="CTL-3"></a>
    ### CTL-3 · Retry

A test names the rules it checks with the pytest marker `@pytest.mark.rule("CTL-3")`
(several ids may be given: `rule("CTL-3", "GAT-1")`). Every `*.py` file under the tests
directory is scanned, subfolders included.

Exit 1, listing every problem, when:
- a rule has no test naming it and is not in NOT_YET_IMPLEMENTED;
- a test names an id that rules.md lacks;
- an id in NOT_YET_IMPLEMENTED already has a test, or is not a rule (the list only shrinks);
- rules.md is malformed: an anchor without its heading, a heading without its anchor,
  an id declared twice;
- with --spec FILE: a rule in rules.md is not in FILE, or an id of FILE (a bullet
  starting `- XXX-N`) is not in rules.md.
Exit 2 when an input cannot be read. Otherwise exit 0.

Usage: .venv/bin/python scripts/rulecheck.py [--tests DIR] [--rules FILE] [--spec FILE]
Defaults are relative to the repository root: tests/ and docs/rules.md.
Stdlib only.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Rules that no test names yet; each is to be implemented by a later issue. This list may
# only shrink: once a test names one of these ids, the check fails until it is removed here.
NOT_YET_IMPLEMENTED: frozenset[str] = frozenset()

RULE_ID = r"[A-Z]{3}-\d+"
ANCHOR = re.compile(rf'^\s*<a id="({RULE_ID})"></a>\s*$')
HEADING = re.compile(rf"^###\s+({RULE_ID})\b")
SPEC_DEF = re.compile(rf"^- ({RULE_ID})\b", re.M)
RULE_USE = re.compile(r"rule\(([^)]*)\)")
QUOTED_ID = re.compile(rf"[\"']({RULE_ID})[\"']")


def id_key(rule_id: str) -> tuple[str, int]:
    prefix, _, number = rule_id.partition("-")
    return prefix, int(number)


def read_rules(text: str) -> tuple[list[str], list[str]]:
    """Return the rule ids of rules.md in order, and the problems found in its layout.

    An id counts as a rule when it has an anchor or a heading; each needs the other.
    """
    lines = text.splitlines()
    found: list[tuple[int, str]] = []
    problems: list[tuple[int, str]] = []
    anchored_headings: set[int] = set()
    for i, line in enumerate(lines):
        anchor = ANCHOR.match(line)
        if not anchor:
            continue
        rid = anchor.group(1)
        found.append((i, rid))
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        heading = HEADING.match(lines[j]) if j < len(lines) else None
        if heading is not None and heading.group(1) == rid:
            anchored_headings.add(j)
        else:
            problems.append((i, f"anchor {rid} is not followed by a '### {rid}' heading"))
    for i, line in enumerate(lines):
        heading = HEADING.match(line)
        if heading and i not in anchored_headings:
            rid = heading.group(1)
            found.append((i, rid))
            problems.append((i, f'heading {rid} has no <a id="{rid}"></a> line before it'))
    ids: list[str] = []
    for i, rid in sorted(found):
        if rid in ids:
            problems.append((i, f"rule {rid} is declared twice"))
        else:
            ids.append(rid)
    return ids, [f"line {i + 1}: {problem}" for i, problem in sorted(problems)]


def read_uses(tests: Path) -> dict[str, set[str]]:
    """Map each rule id named by a test marker to the files that name it."""
    used: dict[str, set[str]] = {}
    for path in sorted(tests.rglob("*.py")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for call in RULE_USE.findall(text):
            for rid in QUOTED_ID.findall(call):
                used.setdefault(rid, set()).add(shown(path))
    return used


def shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def check(
    rules: list[str], used: dict[str, set[str]], spec: list[str] | None
) -> list[tuple[str, list[str]]]:
    """Return (heading, lines) for each kind of problem found."""
    known = set(rules)
    sections: list[tuple[str, list[str]]] = []

    def add(title: str, items: list[str]) -> None:
        if items:
            sections.append((title, items))

    add(
        "rules in rules.md that no test names (add a test, or add the id to "
        "NOT_YET_IMPLEMENTED if a later issue implements it):",
        [r for r in rules if r not in used and r not in NOT_YET_IMPLEMENTED],
    )
    add(
        "tests name ids that rules.md lacks:",
        [f"{r}  ({', '.join(sorted(used[r]))})" for r in sorted(set(used) - known, key=id_key)],
    )
    add(
        "ids in NOT_YET_IMPLEMENTED that tests already name:",
        [
            f"remove {r} from NOT_YET_IMPLEMENTED  ({', '.join(sorted(used[r]))})"
            for r in sorted(NOT_YET_IMPLEMENTED & set(used), key=id_key)
        ],
    )
    add(
        "ids in NOT_YET_IMPLEMENTED that rules.md lacks:",
        [
            f"remove {r} from NOT_YET_IMPLEMENTED"
            for r in sorted(NOT_YET_IMPLEMENTED - known - set(used), key=id_key)
        ],
    )
    if spec is not None:
        in_spec = set(spec)
        add("rules in rules.md that the spec lacks:", [r for r in rules if r not in in_spec])
        add("spec ids missing from rules.md:", [r for r in spec if r not in known])
        add(
            "ids the spec defines more than once:",
            sorted({r for r in spec if spec.count(r) > 1}, key=id_key),
        )
    return sections


def read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"rulecheck: cannot read {what} {path}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Check that every rule in rules.md has a test.")
    ap.add_argument("--tests", type=Path, default=ROOT / "tests", help="tests directory")
    ap.add_argument("--rules", type=Path, default=ROOT / "docs" / "rules.md", help="rules file")
    ap.add_argument("--spec", type=Path, help="also check rules.md against this spec file")
    args = ap.parse_args(argv)

    rules, layout = read_rules(read_text(args.rules, "rules file"))
    if not args.tests.is_dir():
        print(f"rulecheck: tests directory {args.tests} does not exist", file=sys.stderr)
        return 2
    spec = None
    if args.spec is not None:
        spec = SPEC_DEF.findall(read_text(args.spec, "spec file"))
    used = read_uses(args.tests)

    sections = check(rules, used, spec)
    if layout:
        sections.insert(0, (f"{shown(args.rules)} is malformed:", layout))
    for title, items in sections:
        print(title)
        for item in items:
            print(f"  {item}")
    named = sum(1 for r in rules if r in used)
    pending = sum(1 for r in rules if r in NOT_YET_IMPLEMENTED)
    if spec is not None and set(spec) == set(rules):
        print(f"{shown(args.spec)} and {shown(args.rules)} hold the same {len(rules)} rule ids")
    print(f"{named}/{len(rules)} rules named by tests ({pending} not yet implemented)")
    return 1 if sections else 0


if __name__ == "__main__":
    sys.exit(main())
