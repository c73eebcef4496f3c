"""The views (issue 30): page generation time and size for fleets of 100 / 1,000 /
10,000 tasks and for a 200-turn run, and the time to first render in headless Chromium
(Debian's chromium, scripts/install_chromium.sh) of the largest pages.

- Generation = the page model (`fleet_model` / `run_model`) plus rendering
  (`render_fleet` / `render_run`), median of several runs. Its baseline, measured in
  the same run: writing the same world as a world file (`dumps_world`, what `world
  dump` prints) - the page against the plain JSON of the same records.
- First render = from `Page.navigate` of the file:// URL to the page's first drawing
  done (the `data-ready` flag its script sets), median of 3 loads in one browser; the
  page's own clock (`performance.now()` at that flag, from navigation start) beside it.
- Goals (issue 30): the 10,000-task page renders in under 2 s and its file is under
  5 MB. Each is printed as met or MISSED with the measured figure.

    .venv/bin/python bench/bench_views.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.browser import Chromium, find_chromium  # noqa: E402
from support.views import AT, fleet_world, long_run  # noqa: E402

from markertools_adapters.planstore import PlanStore  # noqa: E402
from markertools_adapters.views import (  # noqa: E402
    fleet_model,
    render_fleet,
    render_run,
    run_model,
)
from markertools_adapters.world import dumps_world  # noqa: E402

GOAL_RENDER_S = 2.0
GOAL_SIZE_B = 5_000_000


def median_time(call: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def first_render(browser: Chromium, path: Path, loads: int) -> tuple[float, float]:
    """(median seconds from navigate to first drawing, median of the page's own clock)."""
    walls, own = [], []
    for _ in range(loads):
        page = browser.page()
        walls.append(page.open(path))
        own.append(float(page.eval("window.__viewReadyMs")) / 1000)
        if page.errors:
            raise SystemExit(f"bench_views: {path.name} logged errors: {page.errors}")
        page.close()
    return statistics.median(walls), statistics.median(own)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    runs = 2 if args.quick else 5
    scratch = Path(tempfile.mkdtemp(prefix="markertools-bench-views-"))
    pages: dict[str, Path] = {}
    print("| page | generation | per task / turn | × world file dump | size |")
    print("|---|---:|---:|---:|---:|")
    sizes: dict[str, int] = {}
    for n in (100, 1_000, 10_000):
        world = fleet_world(n)
        base, text = median_time(lambda w=world: dumps_world(w, indent=None), runs)
        took, html = median_time(lambda w=world: render_fleet(fleet_model(w)), runs)
        name = f"fleet, {n:,} tasks"
        path = scratch / f"fleet-{n}.html"
        path.write_text(html, encoding="utf-8")
        pages[name] = path
        sizes[name] = len(html.encode())
        print(f"| {name} | {took * 1000:.1f} ms | {took / n * 1e6:.1f} µs | {took / base:.1f}× "
              f"(dump {base * 1000:.1f} ms, {len(text.encode()) / 1e6:.2f} MB) | {sizes[name] / 1e6:.2f} MB |")
    state = scratch / "state"
    run_id = long_run(state)
    store = PlanStore(state)
    state_now, events = store.load_current(run_id), store.read_events(run_id)

    def run_page() -> str:
        current = PlanStore(state)
        return render_run(run_model(current.load_current(run_id), current.read_events(run_id), AT), made_at=AT)

    took, html = median_time(run_page, runs)
    base, _ = median_time(lambda: run_model(state_now, events, AT), runs)
    name = "run, 200 turns"
    path = scratch / "run-200.html"
    path.write_text(html, encoding="utf-8")
    pages[name] = path
    sizes[name] = len(html.encode())
    print(f"| {name} (read + model + render) | {took * 1000:.1f} ms | {took / 200 * 1e6:.1f} µs | "
          f"model alone {base * 1000:.1f} ms | {sizes[name] / 1e6:.2f} MB |")

    binary = find_chromium()
    if binary is None:
        print("first render: MISSED - no Chromium to measure with (scripts/install_chromium.sh)")
        return 1
    browser = Chromium(binary)
    try:
        version = browser.version.get("product", "?")
        print(f"\nfirst render in headless {version} (median of 3 loads):")
        print("| page | navigate -> first drawing | page's own clock | size |")
        print("|---|---:|---:|---:|")
        measured = {}
        for name in ("fleet, 1,000 tasks", "fleet, 10,000 tasks", "run, 200 turns"):
            wall, own = first_render(browser, pages[name], 3)
            measured[name] = wall
            print(f"| {name} | {wall * 1000:.0f} ms | {own * 1000:.0f} ms | {sizes[name] / 1e6:.2f} MB |")
    finally:
        browser.close()
    big = "fleet, 10,000 tasks"
    render_ok = measured[big] < GOAL_RENDER_S
    size_ok = sizes[big] < GOAL_SIZE_B
    print(f"goal: 10,000 tasks render in under {GOAL_RENDER_S:.0f} s: "
          f"{'met' if render_ok else 'MISSED'} ({measured[big]:.2f} s)")
    print(f"goal: the 10,000-task file is under {GOAL_SIZE_B / 1e6:.0f} MB: "
          f"{'met' if size_ok else 'MISSED'} ({sizes[big] / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
