"""Parse-layer cost (`parse_turn`, extraction), as ratios against baselines measured in
the same run: `text.count("```")` (a C scan of the text) and a full markdown-it-py
parse (`MarkdownIt("commonmark").parse(text)`). Not a test: it prints, never asserts.

    .venv/bin/python bench/bench_parse.py           # full run (10 KB .. 10 MB)
    .venv/bin/python bench/bench_parse.py --quick   # smaller sizes, fewer repeats
    .venv/bin/python bench/bench_parse.py --baseline /tmp/old/src
        # also time another copy of the package (e.g. a `git worktree` of an older
        # commit) on the same texts in the same run, and print the speed-up

Targets (issue 2): text without markers <= 1.5x count; typical transcripts with
markers <= 5x count and >= 25x faster than markdown-it, agreeing with it exactly;
adversarial inputs linear (time(10n)/time(n) <= 12); `import markertools` cheap, and
`parse_turn` loading neither delivery nor markdown-it-py. The run ends with a summary
table stating MET / MISSED per target with the measured figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from markertools import parse_turn
from markertools.parse.blocks import extract_blocks

PROSE_EN = [
    "The worker reads the whole answer after the turn completes and runs every marker block it finds.",
    "I checked the failing test: the fixture creates the database before the migration runs, so the schema is stale.",
    "Next I will split the parser into two modules and keep the public API unchanged.",
    "See `src/app/config.py` and `tests/test_config.py` for the defaults; the `--strict` flag is off by default.",
    "Performance looks fine: the slow path only runs when a < b, and c > d never happens in practice.",
    "This paragraph has *emphasis*, **strong text**, a [link](https://example.com/docs) and ~approximately~ nothing else.",
]
PROSE_ZH = [
    "我检查了失败的测试：夹具在迁移之前创建了数据库，所以表结构是旧的。",
    "接下来把解析器拆成两个模块，公共接口保持不变。",
    "数据库迁移已经完成，接下来运行完整的测试套件并检查覆盖率。",
]
CODE = {
    "python": "def parse(text: str) -> Plan:\n    blocks = extract(text)\n    return plan(blocks)\n",
    "bash": "make test\ngit diff --stat\npytest -q tests/test_parse.py\n",
    "json": '{\n  "name": "demo",\n  "version": 2,\n  "items": [1, 2, 3]\n}\n',
    "ts": "export function f(x: Array<number>): number {\n  return x.reduce((a, b) => a + b, 0);\n}\n",
    "diff": "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-old = 1\n+new = 2\n",
    "html": '<div class="card">\n  <p>Hello</p>\n</div>\n',
    "": "plain text output\nwith two lines\n",
}
MARKERS = [
    '```task-create\n{"name": "tests", "prompt": "Add unit tests for src/dates.py."}\n```\n',
    '```task-poll\n{"task_id": "@tests", "wait_seconds": 60}\n```\n',
    '```todo-create\n{"title": "Write the API docs", "priority": "high"}\n```\n',
    '```wait-threads\n{"task_ids": ["t-1", "t-2"], "timeout_seconds": 600}\n```\n',
    '```task-list\n{"status": "failed", "limit": 10}\n```\n',
    '```task_create\n{"prompt": "near miss"}\n```\n',
    '```task-cancel\n{"task_id": 42}\n```\n',
    '1. Start the worker:\n   ```task-create\n   {"prompt": "in a list item"}\n   ```\n',
    '> ```task-create\n> {"prompt": "quoted: never runs"}\n> ```\n',
    "```quota-status\n{}\n```\n",
]


def transcript(size: int, markers: int, seed: int = 0) -> str:
    """A synthetic agent transcript of about `size` characters with `markers` blocks.
    With `markers == 0` it has no marker-like fence at all (not even quoted examples):
    the "text without markers" case."""
    rnd = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        c = rnd.random()
        if c < 0.42:
            pool = PROSE_ZH if rnd.random() < 0.3 else PROSE_EN
            chunk = " ".join(rnd.choice(pool) for _ in range(rnd.randint(2, 6))) + "\n\n"
        elif c < 0.56:
            lang = rnd.choice(list(CODE))
            chunk = f"```{lang}\n{CODE[lang] * rnd.randint(1, 6)}```\n\n"
        elif c < 0.68:
            items = rnd.randint(2, 5)
            chunk = "".join(f"- {rnd.choice(PROSE_EN)}\n" for _ in range(items)) + "\n"
        elif c < 0.73:
            chunk = "1. Run the suite:\n   ```bash\n   make test\n   ```\n2. Read the report.\n\n"
        elif c < 0.78:
            chunk = "> " + rnd.choice(PROSE_EN) + "\n> " + rnd.choice(PROSE_EN) + "\n\n"
        elif c < 0.80:
            example = "```task-create\n{}\n```" if markers else "```python\nx = 1\n```"
            chunk = f"````markdown\nAn example block (it never runs):\n{example}\n````\n\n"
        elif c < 0.88:
            chunk = f"## {rnd.choice(['Summary', 'Next steps', 'Findings', '结果'])}\n\n"
        else:
            chunk = "Inline ```code``` and `ticks` in a sentence, with a path `a/b.py`.\n\n"
        parts.append(chunk)
        total += len(chunk)
    for i in range(markers):
        parts.insert(rnd.randrange(len(parts) + 1), MARKERS[i % len(MARKERS)] + "\n")
    return "".join(parts)


def adversarial(kind: str, n: int) -> str:
    if kind == "unclosed openers":
        return "```task-create\n" * n
    if kind == "unclosed openers in lists":
        return "- ```task-create\n" * n
    if kind == "quoted openers":
        return "> ```task-create\n" * n
    if kind == "long line":
        return "x" * (n * 15) + "\n```task-create\n{}\n```\n"
    if kind == "backtick runs":
        return "`" * (n * 15) + "\n" + "``` `x`\n" * (n // 10)
    if kind == "indented openers":
        return "  ```python\n" * n + "```task-list\n{}\n```\n"
    # issue 41: the overrides that follow cmark-gfm (one paragraph of definitions under
    # an underline; `>` lines indented past a list item's quote; lazy lines in lists),
    # each a single markdown-it zone over the whole text
    if kind == "definitions":
        return "[r]: /u\n" * n + "===\n10. x\n    ```task-create\n    {}\n    ```\n"
    if kind == "quotes in lists":
        return "- > a\n      > b\n" * (n // 2) + "   ```task-create\n"
    if kind == "lazy lines in lists":
        return "- - - a\n" + "      b\n" * n + "   ```task-create\n"
    raise ValueError(kind)


ORDINARY_PARTS = [
    "I looked at the failing job. Here is what I found, step by step:\n\n",
    "1. The fixture `db` is created before `migrate()` runs.\n2. So `users.email` is missing.\n"
    "3. Fix: call `migrate()` in `conftest.py`.\n\n",
    "- keep the `--strict` flag\n- drop `legacy_mode`\n  - it is unused since v2\n\n",
    "> Note: the `retry` decorator swallows `KeyboardInterrupt`; see the docs.\n> Quoted twice.\n\n",
    "```python\ndef migrate(db):\n    db.execute('ALTER TABLE users ADD email TEXT')\n```\n\n",
    "```bash\npytest -q tests/test_users.py -k email\n```\n\n",
    '```json\n{"name": "demo", "version": 3}\n```\n\n',
    "```\nTraceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'email'\n```\n\n",
    "To show a fence in markdown, wrap it in four backticks:\n\n````markdown\n```python\nprint(1)\n```\n````\n\n",
    "Use `a`, ``b`c``, and `x = y` inline; *emphasis* and **strong** too.\n\n",
    "| col | value |\n|---|---|\n| a | `1` |\n\n",
]
ORDINARY_MARKERS = [
    '```task-create\n{"name": "fix", "prompt": "Apply the migration fix and run the tests."}\n```\n\n',
    '```task-poll\n{"task_id": "@fix", "wait_seconds": 30}\n```\n\n',
    '```todo-create\n{"title": "Document the email column"}\n```\n\n',
]


def ordinary_answer(size: int, markers: int, seed: int = 0) -> str:
    """An ordinary agent answer: prose, numbered and nested lists, block quotes, many
    non-marker fences, inline backticks, a 4-backtick markdown example; `markers` blocks
    spread evenly through it (prose-only text flatters the scanner)."""
    rnd = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        part = rnd.choice(ORDINARY_PARTS)
        parts.append(part)
        total += len(part)
    for i in range(markers):
        parts.insert((i + 1) * len(parts) // (markers + 1), ORDINARY_MARKERS[i % 3])
    return "".join(parts)


def best(fn: Callable[[], object], repeat: int, sample: float = 0.005) -> float:
    """Best time of one call: `repeat` samples of enough calls to last >= `sample` s
    each (short calls are timed in loops, so timer resolution and noise stay small; the
    garbage left by earlier cases is collected first, so it is not billed to this one)."""
    gc.collect()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= sample or number >= 100_000:
            break
        number = min(100_000, max(number * 2, int(number * sample / max(elapsed, 1e-7))))
    times = [elapsed / number]
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def markdown_it_parse() -> Callable[[str], object]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    return md.parse


def agree(text: str) -> bool:
    return extract_blocks(text) == extract_blocks(text, full=True)


def kb(n: int) -> str:
    return f"{n // 1_000_000} MB" if n >= 1_000_000 else f"{n // 1_000} KB"


ADVERSARIAL = (
    "unclosed openers",
    "unclosed openers in lists",
    "quoted openers",
    "long line",
    "backtick runs",
    "indented openers",
    "definitions",
    "quotes in lists",
    "lazy lines in lists",
)


def time_parse_turn(sizes: list[int], repeat: int) -> dict[str, float]:
    """parse_turn time per transcript (used for a --baseline copy, in a child process)."""
    out: dict[str, float] = {}
    for size in sizes:
        for markers in (0, 5, 20):
            text = transcript(size, markers, seed=size + markers)
            out[f"{size}/{markers}"] = best(lambda t=text: parse_turn(t), repeat)
    return out


def baseline_times(path: str, sizes: list[int], repeat: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": path + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_parse as b\n"
        "import markertools; assert markertools.__file__.startswith(sys.argv[2]), markertools.__file__\n"
        "print(json.dumps(b.time_parse_turn(json.loads(sys.argv[3]), int(sys.argv[4]))))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    args = [sys.executable, "-c", code, here, os.path.abspath(path), json.dumps(sizes), str(repeat)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def import_costs(repeat: int, cached: bool) -> dict[str, float]:
    """Best wall time of a fresh interpreter running each snippet. `cached`: with a warm
    bytecode cache (in a temporary PYTHONPYCACHEPREFIX), as an installed package runs;
    else with PYTHONDONTWRITEBYTECODE, compiling every module each time."""
    snippets = {
        "bare": "pass",
        "import": "import markertools",
        "parse_turn": "import markertools; markertools.parse_turn('x')",
        "everything": "import markertools as m; [getattr(m, n) for n in m.__all__]",
    }
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as prefix:
        if cached:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = prefix
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        for code in snippets.values():  # warm the cache (and the disk)
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
        times = {k: 1e9 for k in snippets}
        for _ in range(repeat):  # interleaved, so a busy moment hurts every snippet alike
            for key, code in snippets.items():
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], env=env, check=True)
                times[key] = min(times[key], time.perf_counter() - start)
    return times


def parse_turn_modules() -> tuple[bool, bool]:
    """(delivery loaded?, markdown-it loaded?) after `import markertools` and
    `parse_turn` on a typical transcript with markers (a failed probe counts as loaded)."""
    code = (
        "import sys, bench_parse as b, markertools\n"
        "markertools.parse_turn(b.transcript(100_000, 20, seed=1))\n"
        "print(int(any(m.startswith('markertools.deliver') for m in sys.modules)),"
        " int('markdown_it' in sys.modules))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    words = out.stdout.split()
    if out.returncode != 0 or len(words) != 2:
        return True, True
    return words[0] == "1", words[1] == "1"


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    ap.add_argument("--baseline", metavar="SRC", help="directory holding another markertools")
    args = ap.parse_args()
    repeat = 3 if args.quick else 7
    sizes = [10_000, 100_000, 1_000_000] if args.quick else [10_000, 100_000, 1_000_000, 10_000_000]
    md_parse = markdown_it_parse()
    base = baseline_times(args.baseline, sizes, repeat) if args.baseline else {}

    print("== transcripts: parse_turn time / text.count('```') time ==")
    extra = f" {'baseline':>10} {'speedup':>7}" if base else ""
    print(
        f"{'size':>10} {'markers':>7} {'count':>9} {'parse_turn':>11} {'ratio':>6} "
        f"{'md-it':>10} {'md/parse':>8} agree{extra}"
    )
    rows: list[tuple[int, int, float, float, bool]] = []  # size, markers, ratio, md/ours, agree
    rows_ordinary: list[tuple[int, int, float, bool]] = []
    for size in sizes:
        for markers in (0, 5, 20):
            text = transcript(size, markers, seed=size + markers)
            count = best(lambda t=text: t.count("```"), repeat * 3)
            ours = best(lambda t=text: parse_turn(t), repeat)
            md_time = best(lambda t=text: md_parse(t), 1 if size >= 1_000_000 else repeat)
            ok = agree(text)
            rows.append((size, markers, ours / count, md_time / ours, ok))
            line = (
                f"{len(text):>10} {markers:>7} {count * 1e3:>7.3f}ms {ours * 1e3:>9.3f}ms "
                f"{ours / count:>5.1f}x {md_time * 1e3:>8.1f}ms {md_time / ours:>7.0f}x {ok!s:>5}"
            )
            old = base.get(f"{size}/{markers}")
            if old is not None:
                line += f" {old * 1e3:>8.3f}ms {old / ours:>6.1f}x"
            print(line)

    print("\n== ordinary agent answers (many non-marker fences, lists, quotes, inline code) ==")
    print(f"{'size':>10} {'markers':>7} {'count':>9} {'parse_turn':>11} {'ratio':>6} agree")
    for size, markers in ((10_000, 0), (20_000, 0), (100_000, 0), (20_000, 3), (10_000, 5)):
        text = ordinary_answer(size, markers, seed=size + markers)
        count = best(lambda t=text: t.count("```"), repeat * 3)
        ours = best(lambda t=text: parse_turn(t), repeat)
        ok = agree(text)
        rows_ordinary.append((size, markers, ours / count, ok))
        print(
            f"{len(text):>10} {markers:>7} {count * 1e3:>7.3f}ms {ours * 1e3:>9.3f}ms "
            f"{ours / count:>5.1f}x {ok!s:>5}"
        )

    print("\n== adversarial: time(10n) / time(n) (linear <= 12) ==")
    base_n = 10_000 if args.quick else 20_000
    linear: list[tuple[str, float]] = []
    for kind in ADVERSARIAL:
        small, large = adversarial(kind, base_n), adversarial(kind, base_n * 10)
        t_small = best(lambda t=small: parse_turn(t), repeat)
        t_large = best(lambda t=large: parse_turn(t), max(1, repeat // 2))
        linear.append((kind, t_large / t_small))
        print(
            f"{kind:>26}: n={len(small):>9} {t_small * 1e3:8.1f}ms  10n={len(large):>9} "
            f"{t_large * 1e3:9.1f}ms  ratio {t_large / t_small:5.1f}"
        )
    # the one case near the goal: how much of it is CPython's cyclic garbage collector
    # (it walks every live object on a full collection, and this input makes ~1M of them)
    small, large = adversarial("unclosed openers in lists", base_n), adversarial(
        "unclosed openers in lists", base_n * 10
    )
    gc.disable()
    try:
        t_small = best(lambda t=small: parse_turn(t), repeat)
        t_large = best(lambda t=large: parse_turn(t), max(1, repeat // 2))
    finally:
        gc.enable()
    print(
        f"{'... in lists, gc disabled':>26}: ratio {t_large / t_small:5.1f} "
        "(the rest of the ratio above is the garbage collector's full collections)"
    )
    big = adversarial("unclosed openers", 100_000)
    t_big = best(lambda: parse_turn(big), 1)
    print(f"100k unclosed openers ({len(big) / 1e6:.1f} MB): {t_big * 1e3:.0f}ms")

    costs = import_costs(repeat + 3, cached=True)
    raw = import_costs(repeat + 3, cached=False)

    def over(times: dict[str, float], key: str) -> str:
        return f"+{max(times[key] - times['bare'], 0.0) * 1e3:.0f}ms"

    print(f"\n== import, fresh interpreter, best of {repeat + 3} (over a bare interpreter) ==")
    for label, times in (("bytecode cached (installed)", costs), ("no bytecode cache", raw)):
        print(
            f"  {label:<28} import markertools {over(times, 'import'):>6}; + parse_turn "
            f"{over(times, 'parse_turn'):>6}; every public name {over(times, 'everything'):>6}"
        )
    delivery, markdown = parse_turn_modules()

    print("\n== summary: issue 2 targets ==")
    table: list[tuple[str, str, bool]] = []
    for size in sizes:
        quiet = [r for r in rows if r[0] == size and r[1] == 0]
        table.append(
            (f"no markers <= 1.5x count @ {kb(size)}", f"{quiet[0][2]:.1f}x", quiet[0][2] <= 1.5)
        )
    for size in sizes:
        marked = [r for r in rows if r[0] == size and r[1] > 0]
        figures = " / ".join(f"{r[2]:.1f}x" for r in marked)
        worst = max(r[2] for r in marked)
        table.append((f"markers <= 5x count @ {kb(size)} (5 / 20)", figures, worst <= 5))
    for size in sizes:
        marked = [r for r in rows if r[0] == size and r[1] > 0]
        figures = " / ".join(f"{r[3]:.0f}x" for r in marked)
        worst = min(r[3] for r in marked)
        table.append(
            (f">= 25x faster than markdown-it @ {kb(size)} (5 / 20)", figures, worst >= 25)
        )
    disagree = [f"{kb(r[0])}/{r[1]}" for r in rows if not r[4]]
    table.append(
        ("agrees with markdown-it (every transcript)", ", ".join(disagree) or "all", not disagree)
    )
    worst_kind, worst_ratio = max(linear, key=lambda item: item[1])
    table.append(
        (
            "adversarial linear: 10n/n <= 12",
            f"max {worst_ratio:.1f} ({worst_kind})",
            worst_ratio <= 12,
        )
    )
    table.append(
        (
            "parse_turn loads no delivery, no markdown-it",
            f"delivery {'loaded' if delivery else 'not loaded'}, "
            f"markdown-it {'loaded' if markdown else 'not loaded'}",
            not delivery and not markdown,
        )
    )
    plain = [r for r in rows_ordinary if r[1] == 0]
    worst_plain = max(r[2] for r in plain)
    table.append(
        ("ordinary answers, no markers <= 1.5x", f"max {worst_plain:.1f}x", worst_plain <= 1.5)
    )
    small = [r for r in rows_ordinary if r[1] > 0]
    worst_small = max(r[2] for r in small)
    table.append(
        ("ordinary answers with markers <= 5x", f"max {worst_small:.1f}x", worst_small <= 5)
    )
    table.append(("ordinary answers agree", f"{sum(r[3] for r in rows_ordinary)}/{len(rows_ordinary)}",
                  all(r[3] for r in rows_ordinary)))  # fmt: skip
    width = max(len(t[0]) for t in table)
    for name, figure, ok in table:
        print(f"  {name:<{width}}  {figure:<28} {verdict(ok)}")
    print(
        f"  {'import markertools (no target figure)':<{width}}  "
        f"{over(costs, 'import')}; with parse_turn {over(costs, 'parse_turn')} (bytecode cached)"
    )
    worst_case_table(args.quick)


def worst_case_table(quick: bool) -> None:
    """The worst-case bodies of bench_worst.py (TRN-12), printed after the parse tables."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_worst

    sys.argv = [sys.argv[0], *(["--quick"] if quick else [])]
    print()
    bench_worst.main()


if __name__ == "__main__":
    main()
