# Owns: the page model of a run's timeline (VEW-2): from a run as its journal holds it
# (`PlanStore.load_current`) and its logged events (`PlanStore.read_events`) to lanes
# (a "run" lane for run-wide marks, then one lane per role in the plan's order), each
# turn a bar from its launch to its end coloured by outcome, the marks (decisions,
# dispatches, pauses and resumes, alerts, quota observations, other control events)
# and the time axis, all with their coordinates in the page's SVG.
#
# Must never: do I/O or read a clock (`now` arrives as an argument); produce markup
# (texts stay plain data for the render step to escape, VEW-3); fail on a log that is
# still being written (a turn without an end is drawn up to the end of what is known,
# as live while the run is unfinished).
#
# Invariants:
#   Rule 1: every turn the log shows (a Launch, or a TurnStarted without one) is one bar
#           in its role's lane, and bars of a lane never overlap; start <= end, and
#           every coordinate lies inside the plot.
#   Rule 2: a turn's instruction is the text the role was to be sent when it was
#           launched: the plan's instruction first, then the last applied dispatch.
#   Rule 3: a bar's outcome is its TurnEnded outcome; a turn without an end is "live"
#           while the run is unfinished, "lost" when the host restarted under it
#           (PLN-6: never re-sent) and "unfinished" once the run finished.
#   Rule 4: texts are cut to bounds (labels, instructions, the reply head).
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

import attrs

from markertools.plans import (
    RUN_MACHINE,
    Budget,
    Cancel,
    DecisionTimeout,
    Dispatch,
    Event,
    Finish,
    Halt,
    HostRestarted,
    Launch,
    Pause,
    QuotaObserved,
    QuotaWindow,
    Resume,
    RunState,
    StartRun,
    Tune,
    TurnEnded,
    TurnStarted,
)
from markertools_adapters.views._text import cut, first_line, span, utc

LABEL_CHARS: Final[int] = 48
LANE_CHARS: Final[int] = 22  # a lane name fits the label column; its title holds more
MARK_CHARS: Final[int] = 160
DETAIL_CHARS: Final[int] = 600
INSTRUCTION_CHARS: Final[int] = 4000
REPLY_HEAD_CHARS: Final[int] = 1200
# geometry of the SVG (pixels)
LABEL_WIDTH: Final[int] = 170
LANE_HEIGHT: Final[int] = 50
MARK_STRIP: Final[int] = 11  # marks sit above the bars, centred this far below a lane's top
BAR_HEIGHT: Final[int] = 22
AXIS_HEIGHT: Final[int] = 28
MIN_PLOT: Final[int] = 900
MAX_PLOT: Final[int] = 14000
PX_PER_TURN: Final[int] = 14
MIN_BAR: Final[float] = 3.0
MARK_GAP: Final[float] = 12.0  # marks closer than this on a lane are staggered
MARK_SHIFT: Final[int] = 9  # a crowded mark moves right by this much (its time is in its title)
RUN_LANE: Final[str] = "run"
OUTCOMES: Final[tuple[str, ...]] = (
    "completed",
    "failed",
    "interrupted",
    "timed_out",
    "live",
    "lost",
    "unfinished",
)
MARK_KINDS: Final[tuple[str, ...]] = (
    "decision",
    "dispatch",
    "pause",
    "resume",
    "alert",
    "quota",
    "control",
)
_STEPS: Final[tuple[int, ...]] = (
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
)  # fmt: skip


class LoggedLike(Protocol):
    """What the model reads of a journal line (`planstore.LoggedEvent` has it)."""

    @property
    def seq(self) -> int: ...
    @property
    def at(self) -> float: ...
    @property
    def outcome(self) -> str: ...
    @property
    def event(self) -> Event: ...


@attrs.frozen
class Lane:
    """One lane: the run's own (index 0) or a role's."""

    index: int
    name: str
    title: str  # the role's name and `role` text ("" for the run lane)
    status: str
    turns: int
    y: int


@attrs.frozen
class TurnBar:
    """One turn of a role (Rule 1): where its bar is and what selecting it shows."""

    index: int
    lane: int
    role: str
    number: int  # the role's 1st, 2nd, ... turn
    start: float
    end: float
    outcome: str
    instruction: str
    reply_head: str
    reply_chars: int
    thread_id: str
    turn_id: str
    decision_id: str
    x: float
    width: float
    y: int


@attrs.frozen
class Mark:
    """One event drawn as a mark on a lane."""

    lane: int
    kind: str  # one of MARK_KINDS
    at: float
    label: str
    detail: str
    x: float
    y: int


@attrs.frozen
class Tick:
    """A label of the time axis."""

    x: float
    label: str


@attrs.frozen
class RunModel:
    """The whole timeline page."""

    run_id: str
    goal: str
    plan: str
    status: str
    pause_reason: str
    created_at: float
    start: float
    end: float
    live: bool  # the run is unfinished: what is shown is what is known so far
    turns_used: int
    turn_limit: int
    width: int
    height: int
    plot_left: int
    plot_width: int
    lanes: tuple[Lane, ...]
    bars: tuple[TurnBar, ...]
    marks: tuple[Mark, ...]
    ticks: tuple[Tick, ...]
    alerts: tuple[tuple[str, str], ...]  # (time, text), newest last
    quota: str
    per_outcome: tuple[tuple[str, int], ...]
    events: int

    def to_data(self) -> dict[str, Any]:
        """The JSON island: what selecting a turn or a mark shows."""
        return {
            "turns": [
                {
                    "role": b.role,
                    "n": b.number,
                    "outcome": b.outcome,
                    "start": utc(b.start),
                    "end": utc(b.end),
                    "took": span(b.end - b.start),
                    "instruction": b.instruction,
                    "reply": b.reply_head,
                    "replyChars": b.reply_chars,
                    "thread": b.thread_id,
                    "turn": b.turn_id,
                    "decision": b.decision_id,
                }
                for b in self.bars
            ],
            "marks": [
                {"kind": m.kind, "at": utc(m.at), "label": m.label, "detail": m.detail}
                for m in self.marks
            ],
        }


@attrs.define
class _Open:
    role: str
    start: float
    instruction: str
    thread_id: str = ""
    turn_id: str = ""


@attrs.define
class _Raw:
    role: str
    number: int
    start: float
    end: float | None
    outcome: str
    instruction: str
    reply: str | None = None
    thread_id: str = ""
    turn_id: str = ""
    decision_id: str = ""


def run_model(state: RunState, events: Sequence[LoggedLike], now: float | None = None) -> RunModel:
    """The timeline of `state`'s run from its logged `events` (in log order). `now`: the
    time the page is made, so a live turn's bar reaches it (None: the last known time)."""
    finished = state.status in RUN_MACHINE.terminal
    names = [r.name for r in state.proposal.workers]
    pending = {r.name: r.instruction for r in state.proposal.workers}
    lane_of = {name: n + 1 for n, name in enumerate(names)}
    open_turns: dict[str, _Open] = {}
    raws: list[_Raw] = []
    counts: dict[str, int] = dict.fromkeys(names, 0)
    marks: list[tuple[int, str, float, str, str]] = []  # lane, kind, at, label, detail
    times = [state.created_at, state.updated_at]

    def lane(role: str | None) -> int:
        if role is None:
            return 0
        if role not in lane_of:  # a role the plan does not name (a damaged log): its own lane
            lane_of[role] = len(names) + 1
            names.append(role)
            counts[role] = 0
            pending[role] = ""
        return lane_of[role]

    def close(role: str, at: float, outcome: str, reply: str | None, decision: str) -> None:
        turn = open_turns.pop(role, None)
        if turn is None:  # an end without a start in the log: a zero-length turn
            turn = _Open(role, at, pending.get(role, ""))
            counts[role] = counts.get(role, 0) + 1
            raws.append(_Raw(role, counts[role], at, None, "", turn.instruction))
        for raw in reversed(raws):
            if raw.role == role and raw.end is None:
                raw.end, raw.outcome, raw.reply, raw.decision_id = at, outcome, reply, decision
                raw.thread_id, raw.turn_id = turn.thread_id, turn.turn_id
                break

    def start(role: str, at: float) -> _Open:
        lane(role)
        turn = _Open(role, at, pending.get(role, ""))
        open_turns[role] = turn
        counts[role] = counts.get(role, 0) + 1
        raws.append(_Raw(role, counts[role], at, None, "", turn.instruction))
        return turn

    for entry in events:
        at = entry.at if math.isfinite(entry.at) else state.updated_at
        times.append(at)
        ev = entry.event
        applied = entry.outcome in ("applied", "")
        note = "" if applied else f" ({entry.outcome})"
        if isinstance(ev, Launch) and applied:
            if ev.role in open_turns:  # a launch over an open turn: the old one is lost
                close(ev.role, at, "lost", None, "")
            start(ev.role, at)
        elif isinstance(ev, TurnStarted) and applied:
            turn = open_turns.get(ev.role) or start(ev.role, at)
            turn.thread_id = ev.thread_id or turn.thread_id
            turn.turn_id = ev.turn_id or turn.turn_id
        elif isinstance(ev, TurnEnded):
            if applied:
                close(ev.role, at, ev.outcome, ev.reply, ev.decision_id)
            else:
                marks.append((lane(ev.role), "control", at, f"turn end{note}", ""))
        elif isinstance(ev, Dispatch):
            if applied:
                pending[ev.role] = ev.instruction
            label = f"dispatch{note}: {first_line(ev.instruction, MARK_CHARS)}"
            marks.append((lane(ev.role), "dispatch", at, label, cut(ev.instruction, DETAIL_CHARS)))
        elif isinstance(ev, Finish):
            label = f"finished{note}: {first_line(ev.conclusion, MARK_CHARS)}"
            target = lane(ev.role) if ev.role else 0
            marks.append((target, "decision", at, label, cut(ev.conclusion, DETAIL_CHARS)))
        elif isinstance(ev, DecisionTimeout):
            marks.append((lane(ev.role), "decision", at, f"reminder{note}: no decision yet", ""))
        elif isinstance(ev, QuotaObserved):
            text = "; ".join(_window(w) for w in ev.windows) or "no window reported"
            marks.append(
                (0, "quota", at, cut(f"quota{note}: {text}", MARK_CHARS), cut(text, DETAIL_CHARS))
            )
        elif isinstance(ev, Pause):
            marks.append((0, "pause", at, f"pause{note}", "paused on request"))
        elif isinstance(ev, Halt):
            detail = cut(ev.detail.render("en"), DETAIL_CHARS)
            label = cut(f"paused{note} ({ev.kind}): {first_line(detail, MARK_CHARS)}", MARK_CHARS)
            marks.append((lane(ev.role), "pause", at, label, detail))
        elif isinstance(ev, HostRestarted):
            for role in list(open_turns):
                close(role, at, "lost", None, "")
            marks.append((0, "pause", at, f"host restarted{note}", "live turns were paused"))
        elif isinstance(ev, Resume):
            marks.append((0, "resume", at, f"resume{note}", ""))
        elif isinstance(ev, Cancel):
            marks.append((0, "control", at, f"cancel{note}", ""))
        elif isinstance(ev, StartRun):
            marks.append((0, "control", at, f"start{note}", ""))
        elif isinstance(ev, Budget):
            marks.append((0, "control", at, f"budget{note}: {ev.max_turns} turns", ""))
        elif isinstance(ev, Tune):
            changes = ", ".join(
                f"{k} {v}"
                for k, v in (
                    ("model", ev.model),
                    ("effort", ev.effort),
                    ("timeout", ev.timeout_ms),
                    ("sandbox", ev.sandbox),
                )
                if v is not None
            )
            marks.append(
                (lane(ev.role), "control", at, cut(f"tune{note}: {changes}", MARK_CHARS), "")
            )
    for alert in state.alerts:
        at = alert.at if math.isfinite(alert.at) else state.updated_at
        text = alert.message.render("en")
        marks.append(
            (
                0,
                "alert",
                at,
                cut(f"alert: {first_line(text, MARK_CHARS)}", MARK_CHARS),
                cut(text, DETAIL_CHARS),
            )
        )
        times.append(at)

    finite = [t for t in times if math.isfinite(t)]
    t0 = min(finite) if finite else 0.0
    t1 = max(finite) if finite else 0.0
    live = not finished
    if live and now is not None and math.isfinite(now):
        t1 = max(t1, now)
    for raw in raws:  # Rule 3
        if raw.end is None:
            raw.end = t1
            raw.outcome = "live" if live else "unfinished"
    width_turns = max((sum(1 for r in raws if r.role == n) for n in names), default=0)
    plot = max(MIN_PLOT, min(MAX_PLOT, width_turns * PX_PER_TURN))
    duration = max(t1 - t0, 1.0)

    def x_of(t: float) -> float:
        return round(LABEL_WIDTH + (min(max(t, t0), t1) - t0) / duration * plot, 2)

    lanes_n = len(names) + 1
    y_of = [AXIS_HEIGHT + n * LANE_HEIGHT for n in range(lanes_n)]
    layout = _layout(raws, x_of, LABEL_WIDTH, LABEL_WIDTH + plot)
    bars: list[TurnBar] = []
    for n, raw in enumerate(raws):
        assert raw.end is not None
        x0, width = layout[n]
        reply = raw.reply or ""
        bars.append(
            TurnBar(
                index=n,
                lane=lane_of[raw.role],
                role=cut(raw.role, LABEL_CHARS),
                number=raw.number,
                start=raw.start,
                end=raw.end,
                outcome=raw.outcome,
                instruction=cut(raw.instruction, INSTRUCTION_CHARS),
                reply_head=cut(reply, REPLY_HEAD_CHARS),
                reply_chars=len(reply),
                thread_id=cut(raw.thread_id, LABEL_CHARS),
                turn_id=cut(raw.turn_id, LABEL_CHARS),
                decision_id=cut(raw.decision_id, LABEL_CHARS),
                x=x0,
                width=width,
                y=y_of[lane_of[raw.role]] + LANE_HEIGHT - BAR_HEIGHT - 4,
            )
        )
    role_state = {r.name: r for r in state.roles}
    lanes = [Lane(0, RUN_LANE, "", state.status, 0, y_of[0])]
    for name in names:
        spec = state.proposal.role(name)
        rr = role_state.get(name)
        lanes.append(
            Lane(
                index=lane_of[name],
                name=cut(name, LANE_CHARS),
                title=cut(f"{name}: {spec.role}" if spec else name, LABEL_CHARS * 4),
                status=rr.status if rr else "unknown",
                turns=counts.get(name, 0),
                y=y_of[lane_of[name]],
            )
        )
    mark_rows: list[Mark] = []
    previous: dict[int, tuple[float, int]] = {}  # lane -> (x, how many marks crowd there)
    for ln, kind, at, label, detail in sorted(marks, key=lambda m: (m[2], m[0])):
        x = x_of(at)
        last_x, crowd = previous.get(ln, (-1e9, 0))
        crowd = crowd + 1 if x - last_x < MARK_GAP else 0  # marks that would overlap
        previous[ln] = (x, crowd)
        mark_rows.append(
            Mark(
                lane=ln,
                kind=kind,
                at=at,
                label=label,
                detail=detail,
                x=min(x + MARK_SHIFT * (crowd % 3), LABEL_WIDTH + plot),
                y=y_of[ln] + MARK_STRIP,
            )
        )
    return RunModel(
        run_id=cut(state.run_id, LABEL_CHARS * 2),
        goal=cut(state.proposal.goal, DETAIL_CHARS),
        plan=cut(state.proposal.plan, DETAIL_CHARS),
        status=state.status,
        pause_reason=state.pause_reason or "",
        created_at=state.created_at,
        start=t0,
        end=t1,
        live=live,
        turns_used=state.turns_used,
        turn_limit=state.turn_limit,
        width=LABEL_WIDTH + plot + 20,
        height=AXIS_HEIGHT + lanes_n * LANE_HEIGHT + 10,
        plot_left=LABEL_WIDTH,
        plot_width=plot,
        lanes=tuple(lanes),
        bars=tuple(bars),
        marks=tuple(mark_rows),
        ticks=_ticks(t0, duration, plot),
        alerts=tuple((utc(a.at), cut(a.message.render("en"), DETAIL_CHARS)) for a in state.alerts),
        quota=_quota(state),
        per_outcome=tuple(
            (o, sum(1 for b in bars if b.outcome == o))
            for o in OUTCOMES
            if any(b.outcome == o for b in bars)
        ),
        events=len(events),
    )


def _layout(
    raws: Sequence[_Raw], x_of: Callable[[float], float], left: float, right: float
) -> list[tuple[float, float]]:
    """(x, width) of every bar (Rule 1): at its times where it can be, at least MIN_BAR
    wide, never over the bar before it in its lane, inside [left, right]. A forward pass
    pushes a bar right of the one before; a backward pass pulls bars that ran past the
    right edge back left (shrinking them first), so a crowded end stays ordered."""
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(raws)
    lanes: dict[str, list[int]] = {}
    for n, raw in enumerate(raws):
        lanes.setdefault(raw.role, []).append(n)
    for members in lanes.values():
        placed: list[list[float]] = []
        edge = left
        for n in members:
            end = raws[n].end
            x0 = max(x_of(raws[n].start), edge)
            x1 = max(x_of(end if end is not None else raws[n].start), x0 + MIN_BAR)
            placed.append([x0, x1])
            edge = x1
        limit = right
        for box in reversed(placed):
            if box[1] > limit:
                box[1] = limit
                box[0] = min(box[0], limit - MIN_BAR)
            limit = box[0]
        for n, (x0, x1) in zip(members, placed, strict=True):
            rx0, rx1 = round(max(x0, left), 2), round(x1, 2)
            out[n] = (rx0, round(max(rx1 - rx0, 0.0), 2))
    return out


def _window(w: QuotaWindow) -> str:
    where = f" of {w.window_minutes} min" if w.window_minutes is not None else ""
    bucket = f" ({cut(w.bucket, LABEL_CHARS)})" if w.bucket else ""
    left = f"{w.left_percent:.0f}%" if math.isfinite(w.left_percent) else "?"
    return f"{left} left{where}{bucket}"


def _quota(state: RunState) -> str:
    if state.quota_unobserved:
        return "unknown (the window the plan watches was not reported)"
    if not state.quota_windows:
        return "not reported yet"
    return "; ".join(_window(w) for w in state.quota_windows)


def _ticks(t0: float, duration: float, plot: int) -> tuple[Tick, ...]:
    """Axis labels every `step` seconds, the step chosen so labels stay ~90 px apart."""
    wanted = max(2, plot // 90)
    step = next((s for s in _STEPS if duration / s <= wanted), _STEPS[-1])
    while duration / step > wanted:  # a run of many days
        step *= 2
    out: list[Tick] = []
    k = 0
    while k * step <= duration + 1e-9:
        out.append(Tick(round(LABEL_WIDTH + k * step / duration * plot, 2), span(k * step)))
        k += 1
    return tuple(out)
