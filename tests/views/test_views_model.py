"""The page models of the views (issue 30), without a browser: the fleet tree holds
every task once in display order, with generation and direct children counted exactly
as delivery counts them (the in-memory store's lineage walk and the core's LIN-1
function are the oracle); the run timeline has one bar per launched turn carrying the
instruction the core was sending, bars of a lane never overlap and everything lies in
the plot; texts are cut to bounds; the JSON island can never close its element."""

from __future__ import annotations

import itertools
import json
from html.parser import HTMLParser
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.views import AT, HOSTILE, MEGABYTE, demo_run, fleet_world, hostile_run, hostile_world

from markertools import TASK_STATUSES, AuditRecord, CostRow, Msg, Project, Task
from markertools.deliver.lineage import LINEAGE_MAX_STEPS, generation
from markertools.parse.kinds import EXEC_ORDER
from markertools.plans import (
    Cancel,
    Dispatch,
    Finish,
    HostRestarted,
    Launch,
    Pause,
    QuotaObserved,
    QuotaWindow,
    Resume,
    RunState,
    StartRun,
    TurnEnded,
    TurnStarted,
    apply,
    new_run,
    validate_proposal,
)
from markertools_adapters.memory import MemoryStore
from markertools_adapters.planstore import LoggedEvent, PlanStore
from markertools_adapters.views import fleet_model, json_island, render_fleet, render_run, run_model
from markertools_adapters.views._fleet import EXECUTION_ORDER, ID_CHARS, NAME_CHARS, PROMPT_CHARS
from markertools_adapters.views._run import MIN_BAR, REPLY_HEAD_CHARS
from markertools_adapters.views._text import utc
from markertools_adapters.world import World

# ---- the fleet -----------------------------------------------------------------------

IDS = [f"t{k}" for k in range(12)]


@st.composite
def forests(draw: st.DrawFn) -> World:
    """Tasks with any parent links: none, another task, a missing task, themselves,
    loops; some coordinator subtasks; a few statuses the store does not know."""
    ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=len(IDS), unique=True))
    tasks = []
    for tid in ids:
        parent = draw(st.one_of(st.none(), st.sampled_from([*IDS, "ghost"])))
        tasks.append(
            Task(
                id=tid,
                project_id=draw(st.sampled_from(["p1", "p1", "p2"])),
                status=draw(st.sampled_from([*TASK_STATUSES, "odd"])),
                created_by=draw(st.sampled_from([None, "u1", "u2"])),
                parent_task_id=parent,
                coordinator_part=draw(st.sampled_from([None, None, None, "", "part-a"])),
                prompt=f"prompt of {tid}",
                created_at=draw(st.sampled_from([AT, AT + 1, AT + 2])),
            )
        )
    return World(now=AT, tasks=tuple(tasks))


@pytest.mark.rule("VEW-1", "LIN-1", "LIN-3")
@given(forests(), st.sampled_from([None, "p1"]))
def test_the_tree_holds_every_task_once_with_generation_and_children_as_delivery_counts(
    world: World, project: str | None
) -> None:
    model = fleet_model(world, project)
    shown = [t for t in world.tasks if project is None or t.project_id == project]
    assert sorted(n.id for n in model.nodes) == sorted(t.id for t in shown)
    store = MemoryStore.from_world(world)  # the oracle: the store's walk, the core's LIN-1
    nodes = model.nodes
    for i, node in enumerate(nodes):
        assert node.generation == generation(store.lineage(node.id, LINEAGE_MAX_STEPS))
        assert node.children == store.count_children(node.id)
        # pre-order: a parent before its children, a subtree contiguous
        kids = [j for j, other in enumerate(nodes) if other.parent == i]
        assert node.subtree == 1 + sum(nodes[j].subtree for j in kids)
        if node.parent >= 0:
            p = nodes[node.parent]
            assert node.parent < i < node.parent + p.subtree
            assert node.depth == p.depth + 1 and node.parent_id == p.id
        else:
            assert node.depth == 0
    assert model.summary.tasks == len(shown)
    assert sum(count for _, count in model.summary.per_status) == len(shown)
    assert model.summary.max_generation == max((n.generation for n in nodes), default=0)


@pytest.mark.rule("VEW-1", "LIN-1")
def test_a_loop_of_parent_links_is_drawn_once_and_is_never_a_generation_below_the_bound() -> None:
    world = World(
        now=AT,
        tasks=(
            Task("a", "p", parent_task_id="c", prompt="a"),
            Task("b", "p", parent_task_id="a", prompt="b"),
            Task("c", "p", parent_task_id="b", prompt="c"),
            Task("d", "p", parent_task_id="b", prompt="d"),  # hangs off the loop
            Task("e", "p", parent_task_id="gone", prompt="e"),  # a missing parent row
        ),
    )
    model = fleet_model(world)
    by_id = {n.id: n for n in model.nodes}
    assert [n.id for n in model.nodes] == ["e", "a", "b", "c", "d"]
    assert by_id["a"].in_cycle and by_id["a"].depth == 0  # broken at its smallest id
    assert {by_id[t].generation for t in "abcd"} == {LINEAGE_MAX_STEPS}  # spawning fails closed
    assert by_id["e"].generation == 1 and by_id["e"].parent_missing


@pytest.mark.rule("VEW-1", "TRN-1")
def test_the_execution_order_used_to_split_turns_is_the_parsers() -> None:
    assert tuple(sorted(EXEC_ORDER, key=EXEC_ORDER.__getitem__)) == EXECUTION_ORDER


@pytest.mark.rule("VEW-1", "TRN-7")
def test_audit_records_become_turns_of_marker_actions() -> None:
    def rec(kind: str, at: float, outcome: str = "done", sender: str = "t1") -> AuditRecord:
        return AuditRecord(sender, kind, "t9", outcome, f"{kind} reason", at)

    audit = (
        rec("task-create", AT),
        rec("task-create", AT),  # same kind: the same turn
        rec("task-cancel", AT + 1, "rejected"),
        rec("task-poll", AT + 300),  # a poll that waited 5 minutes: still the same turn
        rec("task-create", AT + 400),  # earlier in TRN-1 than task-poll: a new turn
        rec("wait-threads", AT + 401, sender="t2"),  # another sender in between
        rec("task-list", AT + 402),
        rec("task-list", AT + 402 + 601),  # more than a delivery's default bound later
        rec("turn", AT + 2000, "discarded"),  # a turn discarded whole is a turn of its own
        rec("task-list", AT + 2001),
    )
    world = World(now=AT, tasks=(Task("t1", "p", prompt="x"), Task("t2", "p", prompt="y")), audit=audit)
    turns = {n.id: n.turns for n in fleet_model(world).nodes}
    assert [[a.kind for a in t.actions] for t in turns["t1"]] == [
        ["task-create", "task-create", "task-cancel", "task-poll"],
        ["task-create", "task-list"],
        ["task-list"],
        ["turn"],
        ["task-list"],
    ]
    first = turns["t1"][0].actions[2]
    assert (first.kind, first.outcome, first.target, first.reason) == (
        "task-cancel", "rejected", "t9", "task-cancel reason"
    )
    assert [t.number for t in turns["t1"]] == [1, 2, 3, 4, 5]


@attrs.frozen
class TurnAudit(AuditRecord):
    """An audit record of a newer store that knows its turn."""

    turn_id: str | None = None


@attrs.frozen
class HostedTask(Task):
    """A task of a newer store (the worker host): thread, turn number and lease."""

    thread_id: str | None = None
    turn: int | None = None
    lease_expires_at: float | None = None


@pytest.mark.rule("VEW-1")
def test_fields_a_newer_store_adds_are_shown_when_present() -> None:
    world = World(
        now=AT,
        tasks=(
            HostedTask("t1", "p", prompt="x", host="box-1", thread_id="thr-9", turn=4, lease_expires_at=AT + 60),
            Task("t2", "p", prompt="y"),
        ),
        audit=(
            TurnAudit("t1", "task-list", None, "done", "a", AT, turn_id="u1"),
            TurnAudit("t1", "task-list", None, "done", "b", AT, turn_id="u2"),  # same kind, new turn
        ),
    )
    model = fleet_model(world, extras={"t2": {"lease_host": "box-2", "queue_position": 3}})
    by_id = {n.id: n for n in model.nodes}
    assert dict(by_id["t1"].extras) == {
        "thread": "thr-9", "turn": "4", "host": "box-1", "lease expires": "2027-01-15 08:01:00 UTC"
    }
    assert dict(by_id["t2"].extras) == {"lease host": "box-2", "queue position": "3"}
    assert len(by_id["t1"].turns) == 2
    row = next(r for r in model.to_data()["tasks"] if r["i"] == "t1")
    assert row["x"]["ex"][0] == ["thread", "thr-9"]


@pytest.mark.rule("VEW-1", "VEW-3")
def test_every_text_is_cut_to_a_bound_whatever_a_task_wrote() -> None:
    model = fleet_model(hostile_world())
    big = next(n for n in model.nodes if n.id == "big")
    assert len(big.name) == NAME_CHARS and big.name.endswith("…")
    assert len(big.prompt) <= PROMPT_CHARS and len(big.creator or "") == ID_CHARS
    assert len(json_island(model.to_data())) < 100_000  # 2 MB of input, a small page


@pytest.mark.rule("VEW-1")
def test_the_summary_counts_statuses_spend_per_creator_and_the_caps() -> None:
    model = fleet_model(fleet_world(1000))
    s = model.summary
    assert s.tasks == 1000 and sum(c for _, c in s.per_status) == 1000
    assert s.max_generation == 3 and s.at_generation_limit > 0
    assert s.max_children == 20 and s.at_children_cap > 0
    assert sum(c.tasks for c in s.per_creator) == 1000
    assert round(sum(c.usd for c in s.per_creator), 6) == round(s.usd, 6) > 0
    assert {c.has_quota for c in s.per_creator} == {True}
    assert fleet_model(fleet_world(50), "p-other").summary.tasks == 0
    assert fleet_model(World(now=AT, projects=(Project("p", "shop"),)), "p").scope == "project p (shop)"


@pytest.mark.rule("VEW-1", "WRK-8")
def test_the_page_is_dated_by_its_newest_record_and_unpriced_rows_show_no_dollars() -> None:
    """Issue 36, item 8: a database loaded from a world file keeps the file's clock while
    real activity goes on; the page's "as of" is the later of that clock and its records.
    A task whose cost rows are all unpriced has no dollar figure (never "$0.00")."""
    task = Task("t1", "p", status="completed", created_by="u", created_at=AT + 500)
    audit = AuditRecord("t1", "task-poll", "t1", "done", "polled", AT + 900)
    costs = (CostRow("t1", 1, None, 6, priced=False), CostRow("t1", 2, None, 12, priced=False))
    late = fleet_model(World(now=AT, tasks=(task,), audit=(audit,), costs=costs))
    assert late.now == AT and late.as_of == AT + 900
    assert fleet_model(World(now=AT + 5000, tasks=(task,))).as_of == AT + 5000
    node = late.nodes[0]
    assert (node.spend.priced, node.spend.unpriced, node.spend.tokens) == (0, 2, 18)
    assert late.to_data()["tasks"][0]["x"]["co"] == ["", 18, 2, 2, False]
    (creator,) = late.summary.per_creator
    assert (creator.priced, creator.unpriced, late.summary.priced, late.summary.unpriced) == (
        0, 2, 0, 2
    )
    page = render_fleet(late)
    assert f"as of {utc(AT + 900)}" in page and "world time" not in page
    assert '<td class="num"><span class="muted">2 unpriced</span></td>' in page
    assert "$0.00" not in page
    priced = fleet_model(World(now=AT, tasks=(task,), costs=(CostRow("t1", 1, 0.25, 6), *costs)))
    assert priced.to_data()["tasks"][0]["x"]["co"] == ["$0.25", 24, 3, 2, False]
    assert '<td class="num">$0.25 <span class="muted">+2 unpriced</span></td>' in render_fleet(
        priced
    )


# ---- the JSON island -----------------------------------------------------------------


@pytest.mark.rule("VEW-3")
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
))
def test_the_json_island_reads_back_and_can_never_close_its_element(data: object) -> None:
    text = json_island(data)
    assert json.loads(text) == data
    for forbidden in ("<", ">", "&", "\u2028", "\u2029"):
        assert forbidden not in text


@pytest.mark.rule("VEW-3")
@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_text_in_the_island_is_escaped_not_dropped(hostile: str) -> None:
    text = json_island({"name": hostile})
    assert "</script" not in text.lower() and "<!--" not in text
    assert json.loads(text)["name"] == hostile


# ---- the run timeline ----------------------------------------------------------------

ROLES = ("reader", "fixer", "docs")


def _proposal() -> object:
    raw = {
        "goal": "g",
        "plan": "p",
        "workers": [
            {"name": n, "backend": "codex", "cwd": "/w", "role": n, "instruction": f"{n} first",
             "sandbox": "read-only", **({"dependsOn": ["reader"]} if n == "fixer" else {})}
            for n in ROLES
        ],
        "quota": {"stopAtLeftPercent": 20},
        "maxTurns": 30,
        "timeoutMs": 60_000,
        "allowedModels": [],
        "supervision": {"decisionTimeoutMs": 60_000, "maxDecisionRetries": 2, "maxTotalReminders": 8},
    }
    check = validate_proposal(raw)
    assert check.proposal is not None
    return check.proposal


def _event(kind: str, eid: str, name: str, decision: str, state: RunState, draw: st.DrawFn) -> object:
    if kind == "start":
        return StartRun(eid)
    if kind == "launch":
        return Launch(eid, name)
    if kind == "started":
        return TurnStarted(eid, name, "thr", f"turn-{eid}")
    if kind == "ended":
        outcome = draw(st.sampled_from(["completed", "failed", "interrupted", "timed_out"]))
        return TurnEnded(eid, name, f"d-{eid}", f"reply {eid} <b>", outcome)
    if kind == "dispatch":
        return Dispatch(eid, name, decision, f"instruction {eid}")
    if kind == "finish":
        return Finish(eid, name, f"conclusion {eid}", decision)
    if kind == "pause":
        return Pause(eid)
    if kind == "resume":
        paused = tuple((x.name, f"d-{eid}-{x.name}") for x in state.roles if x.status == "paused")
        return Resume(eid, paused)
    if kind == "restart":
        return HostRestarted(eid)
    if kind == "cancel":
        return Cancel(eid)
    return QuotaObserved(eid, (QuotaWindow(50.0, "codex", 300),))


@st.composite
def runs(draw: st.DrawFn) -> tuple[RunState, list[LoggedEvent], list[str]]:
    """A run driven through the core by random events (refused ones logged too, as the
    journal logs them); returns the state, the log and, per applied Launch, the
    instruction the core then had in flight."""
    state = new_run("r1", _proposal(), AT)  # type: ignore[arg-type]
    log: list[LoggedEvent] = []
    sent: list[str] = []
    now = AT
    n = 0
    for _ in range(draw(st.integers(0, 45))):
        n += 1
        now += draw(st.sampled_from([0, 1, 7, 60]))
        name = draw(st.sampled_from(ROLES))
        r = state.role(name)
        assert r is not None
        decision = r.decision_id or "none"
        natural = {
            "queued": "launch",
            "starting": "started",
            "running": "ended",
            "stopping": "ended",
            "awaiting-decision": draw(st.sampled_from(["dispatch", "dispatch", "finish"])),
            "paused": "resume",
        }.get(r.status, "quota")
        if state.status == "ready":
            natural = "start"
        kind = natural if draw(st.integers(0, 9)) < 7 else draw(st.sampled_from(
            ["start", "launch", "started", "ended", "dispatch", "finish", "pause",
             "resume", "quota", "restart", "cancel"]
        ))
        event = _event(kind, f"e{n}", name, decision, state, draw)
        step = apply(state, event, now)  # type: ignore[arg-type]
        outcome = type(step.outcome).__name__.lower()
        log.append(LoggedEvent(n, now, outcome, event))  # type: ignore[arg-type]
        if outcome == "refused":
            continue
        state = step.state
        if isinstance(event, Launch) and outcome == "applied":
            role_now = state.role(name)
            assert role_now is not None
            sent.append(role_now.inflight_instruction or "")
    return state, log, sent


@pytest.mark.rule("VEW-2", "PLN-6")
@given(runs(), st.sampled_from([None, AT + 10_000]))
def test_one_bar_per_launched_turn_with_the_instruction_the_core_sent(
    run: tuple[RunState, list[LoggedEvent], list[str]], now: float | None
) -> None:
    state, log, sent = run
    model = run_model(state, log, now)
    assert [b.instruction for b in model.bars] == sent
    assert len(model.lanes) == len(ROLES) + 1 and model.lanes[0].name == "run"
    right = model.plot_left + model.plot_width
    for lane in model.lanes[1:]:
        bars = [b for b in model.bars if b.lane == lane.index]
        assert lane.turns == len(bars) == sum(1 for b in model.bars if b.role == lane.name)
        for before, after in itertools.pairwise(bars):
            assert before.x + before.width <= after.x + 1e-6  # never overlapping
    for b in model.bars:
        assert b.start <= b.end
        assert model.plot_left <= b.x and b.x + b.width <= right + 1e-6 and b.width >= MIN_BAR
        assert b.outcome in ("completed", "failed", "interrupted", "timed_out", "live", "lost", "unfinished")
        if b.outcome == "live":
            assert model.live
    for m in model.marks:
        assert model.plot_left <= m.x <= right and 0 < m.y < model.height
    dispatches = sum(1 for e in log if isinstance(e.event, Dispatch))
    assert sum(1 for m in model.marks if m.kind == "dispatch") == dispatches
    assert sum(1 for m in model.marks if m.kind == "alert") == len(state.alerts)
    ended = [e.event for e in log if isinstance(e.event, TurnEnded) and e.outcome == "applied"]
    assert sorted(b.reply_head for b in model.bars if b.reply_head) == sorted(e.reply or "" for e in ended if e.reply)


@pytest.mark.rule("VEW-2")
def test_the_demo_run_as_its_journal_holds_it(tmp_path: Path) -> None:
    run_id = demo_run(tmp_path)
    store = PlanStore(tmp_path)
    model = run_model(store.load_current(run_id), store.read_events(run_id), AT + 700)
    assert [lane.name for lane in model.lanes] == ["run", "reader", "fixer", "docs"]
    assert [(b.role, b.number, b.outcome) for b in model.bars] == [
        ("reader", 1, "completed"), ("docs", 1, "completed"), ("reader", 2, "completed"),
        ("fixer", 1, "failed"), ("fixer", 2, "interrupted"), ("fixer", 3, "live"),
    ]
    reader2 = model.bars[2]
    assert reader2.instruction == "Show the failing test output and the smallest fix."
    assert reader2.reply_head.startswith("FAILED test_last_line")
    assert (reader2.thread_id, reader2.turn_id, reader2.decision_id) == ("thr-reader", "turn-r2", "d3")
    assert model.live and model.bars[-1].end == AT + 700  # a live turn reaches the page's time
    kinds = {m.kind for m in model.marks}
    assert {"dispatch", "decision", "pause", "resume", "alert", "quota", "control"} <= kinds
    quota = [m.label for m in model.marks if m.kind == "quota"]
    assert quota[0] == "quota: 62% left of 10080 min (codex); 88% left of 300 min (codex)"
    assert [m.label for m in model.marks if m.kind == "alert"] == ["alert: paused on request"]
    assert [t.label for t in model.ticks][:3] == ["0s", "2m", "4m"]


@pytest.mark.rule("VEW-2")
def test_a_turn_the_host_restarted_under_is_lost_and_texts_are_cut() -> None:
    state = new_run("r1", _proposal(), AT)  # type: ignore[arg-type]
    events = [StartRun("e1"), Launch("e2", "reader"), TurnStarted("e3", "reader"), HostRestarted("e4")]
    log = []
    for n, event in enumerate(events, 1):
        step = apply(state, event, AT + n)
        state = step.state
        log.append(LoggedEvent(n, AT + n, type(step.outcome).__name__.lower(), event))
    end = TurnEnded("e5", "docs", "d9", "z" * MEGABYTE)
    model = run_model(state, log)
    assert [(b.role, b.outcome) for b in model.bars] == [("reader", "lost")]
    assert any(m.label == "host restarted" for m in model.marks)
    # an end without a start in the log (a damaged log): a bar of its own, the reply cut
    state2 = attrs.evolve(state, alerts=(*state.alerts,))
    model2 = run_model(state2, [*log, LoggedEvent(5, AT + 5, "applied", end)])
    docs = [b for b in model2.bars if b.role == "docs"]
    assert len(docs) == 1 and len(docs[0].reply_head) == REPLY_HEAD_CHARS and docs[0].reply_chars == MEGABYTE
    assert isinstance(Msg("plan.paused.user"), Msg)


# ---- rendering, read back by an HTML parser ---------------------------------------------


class _Elements(HTMLParser):
    """Every start tag with its attributes, and the text between tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.mark.rule("VEW-3")
def test_hostile_pages_parse_to_our_elements_only(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = hostile_run(state)
    store = PlanStore(state)
    pages = [
        render_fleet(fleet_model(hostile_world()), csp=False),
        render_run(run_model(store.load_current(run_id), store.read_events(run_id)), csp=False),
    ]
    for page in pages:
        parsed = _Elements()
        parsed.feed(page)
        tags = [tag for tag, _ in parsed.tags]
        assert tags.count("script") == 2 and tags.count("style") == 1
        assert not {"img", "a", "b", "iframe", "object", "embed", "link", "base"} & set(tags)
        for _, found in parsed.tags:
            assert not [name for name in found if name.startswith("on")]
            urls = {"href", "src", "action", "formaction", "xlink:href", "srcdoc"} & set(found)
            assert not urls  # the pages link to nothing
        text = "".join(parsed.text)
        assert HOSTILE[0] in text  # shown as text (in the markup or the island), never as markup


@pytest.mark.rule("APR-4", "VEW-1")
def test_a_tasks_approval_requests_are_in_its_detail_and_the_pending_ones_counted() -> None:
    from markertools import ApprovalRequest

    world = World(
        now=AT,
        tasks=(
            Task("t1", "p1", status="running", created_by="u1"),
            Task("t2", "p1", status="interrupted", created_by="u1"),
            Task("t9", "p2", status="running", created_by="u1"),
        ),
    )

    def ask(rid: str, task: str, at: float, **kw: object) -> ApprovalRequest:
        return ApprovalRequest(rid, task, "p1", "command", ("ls", "-la"), "/w", asked_at=at, expires_at=at + 900, **kw)  # type: ignore[arg-type]

    requests = [
        ask("apr-1", "t1", AT + 1, reason="look"),
        ask("apr-2", "t1", AT + 2, status="denied", answered_by="task:t0", answer_reason="no"),
        ask("apr-3", "t1", AT + 3, reason="x" * 5000),
        ask("apr-4", "t2", AT + 4),  # its task stopped: listed, not counted as waiting
        ask("apr-9", "t9", AT + 5),  # another project's
    ]
    model = fleet_model(world, "p1", approvals=requests)
    t1, t2 = model.nodes
    assert [a.id for a in t1.approvals] == ["apr-3", "apr-2", "apr-1"]
    assert (t1.pending, t2.pending, model.summary.approvals_pending) == (2, 0, 2)
    assert t1.approvals[1].reason == "no" and t1.approvals[2].reason == "look"
    assert len(t1.approvals[0].reason) <= 400 and t1.approvals[0].what == "ls -la  (in /w)"
    data = model.to_data()["tasks"]
    assert data[0]["ap"] == 2 and "ap" not in data[1]
    assert data[0]["x"]["ap"][1][:5] == ["apr-2", "command", "ls -la  (in /w)", "denied", "task:t0"]
    assert fleet_model(world, "p1").summary.approvals_pending == 0
