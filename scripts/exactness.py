"""Differential run of extraction against the CommonMark references (`make exactness`).

Generates documents with `tests/support/strategies/commonmark_docs.py` (seeded, so a
run is reproducible and a seed names a document), extracts their blocks with
markertools and compares them with cmark-gfm and markdown-it-py
(`tests/support/oracles.py`). Prints how many documents agreed, how many differed in a
documented way (and which difference explains them), and every undocumented
disagreement reduced to a small document; exits 1 if there was one.

    .venv/bin/python scripts/exactness.py                 # 200,000 documents
    .venv/bin/python scripts/exactness.py --docs 20000 --seed 1000000
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.oracles import Verdict, compare  # noqa: E402
from support.strategies.commonmark_docs import random_document  # noqa: E402


def _undocumented(verdict: Verdict) -> bool:
    return bool(verdict.problems())


def shrink(text: str) -> str:
    """A smaller document with an undocumented disagreement: drop lines, then characters,
    while one remains."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not _undocumented(compare(text)):
        return text
    changed = True
    while changed:
        changed = False
        lines = text.split("\n")
        for i in range(len(lines)):
            candidate = "\n".join(lines[:i] + lines[i + 1 :])
            if _undocumented(compare(candidate)):
                text, changed = candidate, True
                break
        if changed:
            continue
        for i in range(len(text)):
            candidate = text[:i] + text[i + 1 :]
            if _undocumented(compare(candidate)):
                text, changed = candidate, True
                break
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0, help="first seed")
    args = parser.parse_args(argv)
    counts: collections.Counter[str] = collections.Counter()
    failures: list[int] = []
    started = time.monotonic()
    for seed in range(args.seed, args.seed + args.docs):
        try:
            verdict = compare(random_document(seed))
        except Exception as exc:  # EXT-6: extraction never raises; say which document did
            counts["RAISED"] += 1
            failures.append(seed)
            print(f"seed {seed}: {type(exc).__name__}: {exc}", flush=True)
            continue
        counts["documents"] += 1
        counts["blocks"] += len(verdict.ours)
        if verdict.cmark_exact:
            counts["cmark: same"] += 1
        elif verdict.cmark_agrees:
            counts["cmark: same but body indentation (documented)"] += 1
        elif verdict.cmark_documented:
            counts["cmark: past markdown-it's nesting limit (documented)"] += 1
        else:
            counts["cmark: UNDOCUMENTED"] += 1
        if verdict.markdown_it_agrees:
            counts["markdown-it: same"] += 1
        elif verdict.markdown_it_documented:
            counts["markdown-it: follows cmark (documented)"] += 1
            for name in verdict.explained_by:
                counts[f"markdown-it: explained by {name}"] += 1
        else:
            counts["markdown-it: UNDOCUMENTED"] += 1
        if verdict.problems():
            failures.append(seed)
        if counts["documents"] % 20_000 == 0:
            print(f"... {counts['documents']} documents, {len(failures)} undocumented", flush=True)
    elapsed = time.monotonic() - started
    print(f"seeds {args.seed}..{args.seed + args.docs - 1}, {elapsed:.0f} s")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    for seed in failures[:10]:
        if counts["RAISED"]:
            break  # the seeds are printed above; reducing would raise again
        print(f"\nseed {seed}, reduced:")
        print("\n".join(compare(shrink(random_document(seed))).problems()))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
