"""Parse-layer cost (`parse_turn`, extraction), as ratios against baselines measured in
the same run: `text.count("```")` (a C scan of the text) and a full markdown-it-py
parse (`MarkdownIt("commonmark").parse(text)`). Not a test: it prints, never asserts.

    .venv/bin/python bench/bench_parse.py           # full run (10 KB .. 10 MB)
    .venv/bin/python bench/bench_parse.py --quick   # smaller sizes, fewer repeats

Targets (issue 2): text without markers <= 1.5x count; typical transcripts with
markers <= 5x count (>= 25x faster than markdown-it) while agreeing with it exactly;
adversarial inputs linear (time(10n)/time(n) <= 12); `import markertools` cost.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from collections.abc import Callable

from markertools import parse_turn
from markertools._extract import extract_blocks

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
    raise ValueError(kind)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def markdown_it_parse() -> Callable[[str], object]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    return md.parse


def agree(text: str) -> bool:
    return extract_blocks(text) == extract_blocks(text, full=True)


def import_cost(repeat: int) -> tuple[float, float]:
    def run(code: str) -> float:
        return best(lambda: subprocess.run([sys.executable, "-c", code], check=True), repeat)

    return run("pass"), run("import markertools")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    args = ap.parse_args()
    repeat = 3 if args.quick else 5
    sizes = [10_000, 100_000, 1_000_000] if args.quick else [10_000, 100_000, 1_000_000, 10_000_000]
    md_parse = markdown_it_parse()

    print("== transcripts: parse_turn time / text.count('```') time ==")
    print(
        f"{'size':>10} {'markers':>7} {'count':>9} {'parse_turn':>11} {'ratio':>6} {'md-it':>10} {'md/parse':>8} agree"
    )
    for size in sizes:
        for markers in (0, 5, 20):
            text = transcript(size, markers, seed=size + markers)
            base = best(lambda t=text: t.count("```"), repeat * 3)
            ours = best(lambda t=text: parse_turn(t), repeat)
            md_time = best(lambda t=text: md_parse(t), 1 if size >= 1_000_000 else repeat)
            print(
                f"{len(text):>10} {markers:>7} {base * 1e3:>7.3f}ms {ours * 1e3:>9.3f}ms "
                f"{ours / base:>5.1f}x {md_time * 1e3:>8.1f}ms {md_time / ours:>7.0f}x {agree(text)}"
            )

    print("\n== adversarial: time(10n) / time(n) (linear <= 12) ==")
    base_n = 10_000 if args.quick else 20_000
    for kind in (
        "unclosed openers",
        "unclosed openers in lists",
        "quoted openers",
        "long line",
        "backtick runs",
        "indented openers",
    ):
        small, large = adversarial(kind, base_n), adversarial(kind, base_n * 10)
        t_small = best(lambda t=small: parse_turn(t), repeat)
        t_large = best(lambda t=large: parse_turn(t), max(1, repeat // 2))
        print(
            f"{kind:>26}: n={len(small):>9} {t_small * 1e3:8.1f}ms  10n={len(large):>9} "
            f"{t_large * 1e3:9.1f}ms  ratio {t_large / t_small:5.1f}"
        )
    big = adversarial("unclosed openers", 100_000)
    t_big = best(lambda: parse_turn(big), 1)
    print(f"100k unclosed openers ({len(big) / 1e6:.1f} MB): {t_big * 1e3:.0f}ms")

    bare, imported = import_cost(repeat)
    print(
        f"\n== import markertools: {imported * 1e3:.0f}ms vs bare interpreter "
        f"{bare * 1e3:.0f}ms (+{(imported - bare) * 1e3:.0f}ms) =="
    )


if __name__ == "__main__":
    main()
