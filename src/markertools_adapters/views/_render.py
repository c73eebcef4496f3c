# Owns: turning a page model (FleetModel, RunModel) into one self-contained HTML file
# with Jinja2 (the `views` extra): the templates, the stylesheet and the scripts are
# package data (views/templates/), inlined into the page; the data the scripts read is
# one JSON island (`<script type="application/json">`), parsed once by the page.
#
# Must never: build markup by concatenating text from the data; turn autoescape off;
# mark anything as safe but our own packaged assets (checked for closing tags) and the
# escaped JSON island; reference anything outside the file (no URL, no font, no CDN).
#
# Invariants:
#   Rule 1 (VEW-3): every text that a task, an agent or a worker wrote reaches the page
#           either through an autoescaped template expression or inside the JSON island,
#           where `<`, `>`, `&`, U+2028 and U+2029 are written as \uXXXX escapes, so
#           nothing in it can end the island (`</script>`) or open a comment (`<!--`).
#   Rule 2: with `csp` (the default) the page carries a Content-Security-Policy that
#           allows only its own inline script and style (by hash) and no request at
#           all: a second guard behind Rule 1, never the only one.
from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

import markertools
from markertools import InvalidArgument
from markertools_adapters.views._fleet import MAX_DIRECT_CHILDREN, MAX_GENERATION, FleetModel
from markertools_adapters.views._run import (
    AXIS_HEIGHT,
    BAR_HEIGHT,
    LANE_HEIGHT,
    MARK_KINDS,
    RunModel,
)
from markertools_adapters.views._text import span, usd, utc

if TYPE_CHECKING:
    import jinja2

KNOWN_STATUSES: Final[frozenset[str]] = frozenset(
    {"queued", "running", "completed", "failed", "interrupted", "merged", "merge-failed"}
)
CREATOR_ROWS: Final[int] = 50
_ISLAND_ESCAPES: Final[dict[int, str]] = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_CLOSERS: Final[tuple[str, ...]] = ("</script", "</style", "<!--", "<script")


def json_island(data: Any) -> str:
    """`data` as JSON text that is safe inside `<script type="application/json">`
    (Rule 1): no `<`, `>` or `&` appears raw, nor U+2028 / U+2029; JSON.parse reads it
    back unchanged. NaN and infinities are refused (not JSON)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_ISLAND_ESCAPES)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("markertools_adapters.views", "templates"),
        autoescape=True,  # every template, whatever its name (Rule 1)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals.update(
        status_class=status_class,
        money=usd,
        bar=_bar,
        shape=_shape,
        version=markertools.__version__,
        mark_kinds=MARK_KINDS,
    )
    return env


@lru_cache(maxsize=4)
def asset(name: str) -> str:
    """A packaged stylesheet or script, checked to hold no tag that would end the element
    it is inlined in."""
    text = (resources.files("markertools_adapters.views") / "templates" / name).read_text(
        encoding="utf-8"
    )
    lowered = text.lower()
    for closer in _CLOSERS:
        if closer in lowered:
            raise InvalidArgument(f"views asset {name} holds {closer!r}; it cannot be inlined")
    return text


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def content_policy(script: str, css: str) -> str:
    """Rule 2: only this page's own script and style (by hash); no request of any kind."""
    return (
        "default-src 'none'; "
        f"script-src {_digest(script)}; style-src {_digest(css)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def status_class(status: str | None) -> str:
    """The CSS class of a task status; an unknown status gets the neutral one."""
    return f"st-{status}" if status in KNOWN_STATUSES else "st-other"


def _bar(count: float, largest: float, width: float) -> float:
    if largest <= 0 or count <= 0:
        return 0.0
    return round(max(count / largest * width, 2.0), 1)


def _shape(kind: str, x: float, y: float) -> str:
    """The SVG path of a mark of `kind` centred on (x, y): numbers only."""
    if kind == "decision":  # diamond
        return (
            f"M{x:.1f},{y - 7:.1f} L{x + 7:.1f},{y:.1f} L{x:.1f},{y + 7:.1f} L{x - 7:.1f},{y:.1f} Z"
        )
    if kind == "dispatch":  # triangle pointing right
        return f"M{x - 5:.1f},{y - 7:.1f} L{x + 7:.1f},{y:.1f} L{x - 5:.1f},{y + 7:.1f} Z"
    if kind == "pause":  # two bars
        return f"M{x - 6:.1f},{y - 7:.1f} h4 v14 h-4 Z M{x + 2:.1f},{y - 7:.1f} h4 v14 h-4 Z"
    if kind == "resume":  # triangle pointing up
        return f"M{x:.1f},{y - 7:.1f} L{x + 7:.1f},{y + 6:.1f} L{x - 7:.1f},{y + 6:.1f} Z"
    if kind in ("alert", "quota"):  # circle
        return f"M{x - 6:.1f},{y:.1f} a6,6 0 1,0 12,0 a6,6 0 1,0 -12,0 Z"
    return f"M{x - 5:.1f},{y - 5:.1f} h10 v10 h-10 Z"  # square


def _page(
    template: str, script_name: str, island_id: str, data: Any, csp: bool, **values: Any
) -> str:
    from markupsafe import Markup

    css, script = asset("views.css"), asset(script_name)
    return (
        _environment()
        .get_template(template)
        .render(
            css=Markup(css),  # our packaged stylesheet, checked by `asset`
            script=Markup(script),  # our packaged script, checked by `asset`
            island=Markup(json_island(data)),  # escaped by `json_island` (Rule 1)
            island_id=island_id,
            csp=content_policy(script, css) if csp else "",
            **values,
        )
    )


def render_fleet(model: FleetModel, *, csp: bool = True) -> str:
    """The fleet page (VEW-1) of `model`, one self-contained HTML document."""
    creator_at = {c: n for n, c in enumerate(model.creators)}

    def quota(c: Any) -> str:
        if not c.has_quota:
            return "no quota row (no limit)"
        if c.quota_total is None:
            return f"{usd(c.quota_used)} used, unlimited"
        return f"{usd(c.quota_used)} of {usd(c.quota_total)} used"

    return _page(
        "fleet.html.j2",
        "fleet.js",
        "fleet-data",
        model.to_data(),
        csp,
        page_title=f"{model.title}: {model.scope}",
        m=model,
        s=model.summary,
        now=utc(model.now),
        as_of=utc(model.as_of if model.as_of is not None else model.now),
        max_status=max((n for _, n in model.summary.per_status), default=0),
        creator_rows=CREATOR_ROWS,
        creator_index=lambda creator: creator_at.get(creator or "", -1),
        quota=quota,
        limits={"generation": MAX_GENERATION, "children": MAX_DIRECT_CHILDREN},
    )


def render_run(model: RunModel, *, made_at: float | None = None, csp: bool = True) -> str:
    """The run timeline page (VEW-2) of `model`; `made_at` is shown on a live run."""
    return _page(
        "run.html.j2",
        "run.js",
        "run-data",
        model.to_data(),
        csp,
        page_title=f"markertools run {model.run_id}",
        m=model,
        start=utc(model.start),
        end=utc(model.end),
        took=span(model.end - model.start),
        made=utc(made_at) if made_at is not None else "unknown",
        lane_height=LANE_HEIGHT,
        bar_height=BAR_HEIGHT,
        axis_height=AXIS_HEIGHT,
    )
