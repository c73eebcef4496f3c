#!/usr/bin/env python3
"""Make the README's two pictures of the views (issue 30):

- docs/images/view-fleet.png: the bundled demo world after `markertools demo` (the
  database `demo --keep` writes), drawn as `markertools view` draws it, with the lead
  task selected;
- docs/images/view-run.png: the demo run of tests/support/views.py (three roles, a
  failed turn, a pause and a resume, the fixer's third turn still running), drawn as
  `markertools dots view` draws it, with the reader's second turn selected.

The inputs are fixed (the demo's virtual clock; the demo run's times), and the run is
drawn as made 11m40s after it started, so the pictures only change when a page does.
Shot in headless Chromium (scripts/install_chromium.sh), 1280 pixels wide.

    .venv/bin/python scripts/make_view_images.py [--out DIR]     (or: make view-images)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.browser import Chromium, distinct_colours, find_chromium  # noqa: E402
from support.views import AT, demo_run  # noqa: E402

from markertools_adapters.planstore import PlanStore  # noqa: E402
from markertools_adapters.stores import open_db  # noqa: E402
from markertools_adapters.views import (  # noqa: E402
    fleet_model,
    render_fleet,
    render_run,
    run_model,
)

MADE_AT = AT + 700  # the demo run's page is "made" just after its last event


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    binary = find_chromium()
    if binary is None:
        print("make_view_images: no Chromium (scripts/install_chromium.sh)", file=sys.stderr)
        return 3
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="markertools-images-") as scratch:
        tmp = Path(scratch)
        db = tmp / "demo.db"
        subprocess.run(
            [sys.executable, "-m", "markertools", "demo", "--keep", str(db)],
            check=True, stdout=subprocess.DEVNULL,
        )
        store = open_db(db, must_exist=True)
        try:
            world = store.export_world(store.world_now())
        finally:
            store.close()
        fleet = tmp / "fleet.html"
        fleet.write_text(render_fleet(fleet_model(world)), encoding="utf-8")
        state = tmp / "state"
        run_id = demo_run(state, "demo-7f3a")
        plans = PlanStore(state)
        model = run_model(plans.load_current(run_id), plans.read_events(run_id), MADE_AT)
        run = tmp / "run.html"
        run.write_text(render_run(model, made_at=MADE_AT), encoding="utf-8")
        browser = Chromium(binary)
        try:
            page = browser.page()
            page.send("Emulation.setDeviceMetricsOverride",
                      {"width": 1280, "height": 1240, "deviceScaleFactor": 1, "mobile": False})
            page.open(fleet)
            page.click("#tree .row .name")  # the lead: its turn of marker actions
            page.eval("window.scrollTo(0, 0)")
            page.settle()
            shot(page, args.out / "view-fleet.png")
            page = browser.page()
            page.open(run)
            page.click("#timeline g.turn", 2)  # the reader's second turn
            page.settle()
            shot(page, args.out / "view-run.png")
        finally:
            browser.close()
    return 0


def shot(page: object, path: Path) -> None:
    data = page.screenshot(path)  # type: ignore[attr-defined]
    colours, dominant = distinct_colours(data)
    if page.errors or colours < 16:  # type: ignore[attr-defined]
        raise SystemExit(f"make_view_images: {path.name} looks wrong: {page.errors}, {colours} colours")  # type: ignore[attr-defined]
    print(f"wrote {path} ({len(data) / 1000:.1f} KB, {colours} colours, {dominant:.0%} background)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
