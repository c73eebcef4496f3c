"""Worst-case bodies (TRN-12, issue 20 item 6): for each kind, generated bodies that fill
the body-size limit in the most expensive ways we could construct — long lists, many
keys, deep nesting up to the limit, long strings full of escapes, many near-miss fences —
timed against a plain body of the same size in the same run. Ratio = (time per byte of
the hostile turn) / (time per byte of the plain turn); goal <= 5 for every kind. Also
times delivery of each hostile turn (in-memory world, virtual clock) and prints the
report size. Not a test: it prints, never asserts (tests/parse/test_worst_case.py checks
the shape: never raises, output within the caps).

    .venv/bin/python bench/bench_worst.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from markertools import deliver_turn, parse_turn
from markertools.domain.model import PermissionGrant, Task
from markertools.parse.jsonstrict import MAX_BODY_CHARS, MAX_DEPTH
from markertools.parse.kinds import KINDS
from markertools_adapters.clock import SeededRandom, VirtualClock
from markertools_adapters.executors import NoopExecutor
from markertools_adapters.memory import MemoryStore
from markertools_adapters.wiring import store_ports
from markertools_adapters.world import World

LIMIT = MAX_BODY_CHARS - 64  # room for the fixed part of each body
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def short_ids(n: int) -> list[str]:
    return [_DIGITS[i // 1296 % 36] + _DIGITS[i // 36 % 36] + _DIGITS[i % 36] for i in range(n)]


def _fill(prefix: dict[str, object], key: str, make: Callable[[int], object]) -> str:
    """The largest body `prefix + {key: make(n)}` that fits LIMIT (n found by bisection)."""
    lo, hi = 1, LIMIT
    best = json.dumps({**prefix, key: make(1)})
    while lo <= hi:
        mid = (lo + hi) // 2
        body = json.dumps({**prefix, key: make(mid)}, separators=(",", ":"))
        if len(body) <= LIMIT:
            best, lo = body, mid + 1
        else:
            hi = mid - 1
    return best


def _base(kind_name: str) -> dict[str, object]:
    kind = next(k for k in KINDS if k.name == kind_name)
    return dict(json.loads(kind.example))


def hostile_bodies(kind_name: str) -> dict[str, str]:
    """name -> body, each close to LIMIT characters."""
    base = _base(kind_name)
    out: dict[str, str] = {}
    if kind_name == "wait-threads":
        # 3-character ids: ~40,000 of them (the quadratic de-duplication of issue 20)
        out["40k ids"] = _fill({}, "task_ids", lambda n: short_ids(min(n, 36**3)))
        out["repeated ids"] = _fill({}, "task_ids", lambda n: ["a", "b"] * (n // 2 + 1))
    out["long list"] = _fill(base, "extra", lambda n: [0] * n)
    keys_body = json.dumps(base)[:-1] + "," if base else "{"
    keys: list[str] = []
    i = 0
    while len(keys_body) + sum(map(len, keys)) < LIMIT - 16:
        keys.append(f'"k{i}":0,')
        i += 1
    out["many keys"] = keys_body + "".join(keys) + '"z":0}'
    nest = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)
    out["deep nesting"] = _fill(base, "extra", lambda n: [json.loads(nest)] * n)
    out["escaped string"] = _fill(base, "extra", lambda n: '\u00e9\n"\\' * n)
    out["surrogate escapes"] = _fill(base, "extra", lambda n: "\U0001f600" * n)
    text_fields = [f.name for f in next(k for k in KINDS if k.name == kind_name).fields
                   if f.kind == "text"]  # fmt: skip
    if text_fields:  # a string field far over its limit
        out["long field"] = _fill(base, text_fields[0], lambda n: "x" * n)
    return out


def plain_body(kind_name: str, size: int) -> str:
    base = _base(kind_name)
    body = json.dumps(base)
    pad = max(0, size - len(body) - len(',"pad":""'))
    return body[:-1] + ("," if base else "") + f'"pad":"{"p" * pad}"}}'


def turn(kind_name: str, body: str) -> str:
    return f"```{kind_name}\n{body}\n```\n"


def near_miss_turn(size: int) -> str:
    unit = "```task-lisst\n{}\n```\n"
    return unit * (size // len(unit))


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _ports() -> object:
    world = World(
        now=1_800_000_000.0,
        permissions=(PermissionGrant("u", "p", ("read", "create_task", "approve_merge")),),
        tasks=(Task("s", "p", created_by="u", status="running"),),
    )
    store = MemoryStore.from_world(world)
    return store_ports(
        store, clock=VirtualClock(world.now), random=SeededRandom(1), executor=NoopExecutor()
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeat = 3 if args.quick else 5
    print("== worst-case bodies: time per byte / time per byte of a plain body of the same size ==")
    print(f"{'kind':<18} {'body':<18} {'bytes':>8} {'parse':>9} {'plain':>9} {'ratio':>6} "
          f"{'deliver':>9} {'report':>8}")  # fmt: skip
    worst = 0.0
    rows = 0
    for kind in KINDS:
        for name, body in hostile_bodies(kind.name).items():
            text = turn(kind.name, body)
            plain = turn(kind.name, plain_body(kind.name, len(body)))
            t = _best(lambda text=text: parse_turn(text), repeat)
            tp = _best(lambda plain=plain: parse_turn(plain), repeat)
            ratio = (t / len(text)) / (tp / len(plain))
            ports = _ports()
            start = time.perf_counter()
            report = deliver_turn(text, sender="s", outcome="completed", ports=ports)  # type: ignore[arg-type]
            td = time.perf_counter() - start
            size = len((report.message or "").encode())
            worst = max(worst, ratio)
            rows += 1
            print(f"{kind.name:<18} {name:<18} {len(text):>8} {t * 1e3:>7.2f}ms {tp * 1e3:>7.2f}ms "
                  f"{ratio:>5.1f}× {td * 1e3:>7.1f}ms {size:>7}B")  # fmt: skip
    text = near_miss_turn(LIMIT)
    plain = turn("task-list", plain_body("task-list", len(text) - 20))
    t = _best(lambda: parse_turn(text), repeat)
    tp = _best(lambda: parse_turn(plain), repeat)
    ratio = (t / len(text)) / (tp / len(plain))
    start = time.perf_counter()
    report = deliver_turn(text, sender="s", outcome="completed", ports=_ports())  # type: ignore[arg-type]
    td = time.perf_counter() - start
    size = len((report.message or "").encode())
    print(f"{'(turn)':<18} {'near-miss fences':<18} {len(text):>8} {t * 1e3:>7.2f}ms "
          f"{tp * 1e3:>7.2f}ms {ratio:>5.1f}× {td * 1e3:>7.1f}ms {size:>7}B")  # fmt: skip
    print(f"\nworst ratio over {rows} hostile bodies: {worst:.1f}× (goal <= 5×); near-miss turn "
          f"{ratio:.1f}× (a turn, not a body: one issue per fence)")  # fmt: skip


if __name__ == "__main__":
    main()
