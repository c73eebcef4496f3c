"""The views in a real headless Chromium (issue 30): each page is written by the
`markertools` command, loaded from file:// with the network shut, and must request
nothing but its own file, log no error and throw nothing; the DOM shows the expected
tasks and lanes; a person's clicks, keys and scrolling do what the page says (collapse
a subtree, filter by status and creator, search, select a task or a turn); a
screenshot of each page is written to the test's directory and is not blank. Pages
built from hostile names and replies run no script: the canary an injection would set
stays unset after every hostile element is hovered and clicked, with the page's
Content-Security-Policy and without it (escaping alone must hold). One browser serves
the whole module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.browser import Chromium, Page, chromium_bin, distinct_colours
from support.cli import cli
from support.codex import codex_bin
from support.views import (
    CANARY,
    HOSTILE,
    demo_run,
    fleet_world,
    hostile_run,
    hostile_world,
    long_run,
)

from markertools_adapters.cli.cmd_view import read_world
from markertools_adapters.planstore import PlanStore
from markertools_adapters.sqlite import create_store_from_world
from markertools_adapters.views import fleet_model, render_fleet, render_run, run_model
from markertools_adapters.views._text import utc
from markertools_adapters.world import World


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    started = Chromium(chromium_bin())
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def page(browser: Chromium) -> Iterator[Page]:
    tab = browser.page()
    try:
        yield tab
    finally:
        tab.close()


def loaded(page: Page, path: Path) -> Page:
    """Open `path`; nothing but the file itself may be requested, and nothing may fail."""
    page.open(path)
    assert_clean(page, path)
    return page


def assert_clean(page: Page, path: Path) -> None:
    page.settle()
    assert page.requests == [path.resolve().as_uri()], page.requests
    assert page.errors == []


def picture(page: Page, tmp_path: Path, name: str) -> Path:
    """A screenshot in the test's directory, checked not to be blank."""
    shot = tmp_path / f"{name}.png"
    colours, dominant = distinct_colours(page.screenshot(shot))
    assert colours >= 16 and dominant < 0.97, (colours, dominant)
    return shot


def rows(page: Page) -> list[str]:
    return list(page.eval("[...document.querySelectorAll('#tree .row .tid')].map(e => e.textContent)"))


def database(tmp_path: Path, world: World) -> Path:
    path = tmp_path / "fleet.db"
    create_store_from_world(world, path).close()
    return path


def view(tmp_path: Path, db: Path, *extra: str) -> Path:
    out = tmp_path / "pages" / "fleet.html"
    out.parent.mkdir(exist_ok=True)  # the command never creates it (issue 36 item 9)
    done = cli("view", "--db", str(db), "--out", str(out), *extra)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.startswith(f"wrote {out} (")
    return out


def run_page(tmp_path: Path, state: Path, run_id: str) -> Path:
    out = tmp_path / "pages" / "run.html"
    out.parent.mkdir(exist_ok=True)  # the command never creates it (issue 36 item 9)
    done = cli("dots", "view", run_id, "--state-dir", str(state), "--out", str(out))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return out


# ---- the fleet -------------------------------------------------------------------------


@pytest.mark.rule("VEW-1")
def test_the_demo_fleet_as_a_person_uses_it(page: Page, tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert cli("demo", "--keep", str(db)).returncode == 0
    out = view(tmp_path, db, "--project", "p-shop")
    loaded(page, out)
    ids = rows(page)
    assert ids[:5] == ["t-lead", "t-api", "t-tests", "t-docs", ids[4]] and len(ids) == 7
    assert "t-bob" in ids and page.text("#shown-count") == "7 of 7 tasks shown"
    assert "running" in page.text("#status-chart") and "alice" in page.text("#creators")
    assert "$12.50 of $50.00 used" in page.text("#creators")
    # collapse the lead's subtree, then open it again
    page.click("#tree .row .toggle")
    page.settle()
    assert rows(page) == ["t-lead", "t-bob", ids[6]]
    page.click("#tree .row .toggle")
    page.settle()
    assert len(rows(page)) == 7
    # select the lead: its turn of marker actions from the audit records
    page.click("#tree .row .name")
    detail = page.text("#detail")
    assert "marker actions by turn" in detail and "turn 1" in detail
    assert "task-create" in detail and "task-cancel" in detail and "done" in detail
    assert "direct children\n4 of 20" in detail
    assert "creator's quota: $12.50 of $50.00 used" in detail
    picture(page, tmp_path, "fleet-demo-selected")
    # filter by status: without queued and running only the others stay, with context
    for status in ("queued", "running"):
        index = page.eval(f"[...document.querySelectorAll('#summary g.status-bar')].findIndex(g => g.dataset.status === {json.dumps(status)})")
        page.click(f"input[data-status='{index}']")
    page.settle()
    assert rows(page) == ["t-lead", "t-api", "t-docs"]
    assert page.eval("[...document.querySelectorAll('#tree .row.context .tid')].map(e => e.textContent)") == ["t-lead"]
    page.click(f"input[data-status='{index}']")  # running back on
    page.settle()
    assert "t-bob" in rows(page)
    # filter by creator with the keyboard: the second creator is bob
    page.eval("document.getElementById('creator').focus()")
    page.key("ArrowDown")
    page.key("ArrowDown")
    page.settle()
    assert page.eval("document.getElementById('creator').selectedOptions[0].textContent") == "bob"
    assert rows(page) == ["t-bob"]
    page.key("ArrowUp")
    page.key("ArrowUp")
    for status in range(4):  # every status on again
        if not page.eval(f"document.querySelector(\"input[data-status='{status}']\").checked"):
            page.click(f"input[data-status='{status}']")
    page.type("#search", "DOCS")  # search by name, case-insensitive
    page.settle()
    assert rows(page) == ["t-lead", "t-docs"]
    assert page.text("#shown-count") == "2 of 7 tasks shown"
    picture(page, tmp_path, "fleet-demo-search")
    assert_clean(page, out)


@pytest.mark.rule("VEW-1", "WRK-8")
def test_a_live_demo_fleet_shows_unpriced_tokens_without_dollars(page: Page, tmp_path: Path) -> None:
    """Issue 36, item 8: after `demo --live --keep` (real Codex, no price table) the page
    said "$0.00 · 18 tokens · 3 unpriced" and was dated by a clock older than its tasks.
    Now unpriced tokens show no dollar figure, and the page is dated by its newest record."""
    keep = tmp_path / "kept"
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "demo", "--live", "--keep", str(keep)],
        env={**os.environ, "MARKERTOOLS_CODEX_BIN": codex_bin()},
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    out = view(tmp_path, keep / "demo.db")
    loaded(page, out)
    ids = rows(page)
    assert ids[0] == "t-lead" and len(ids) == 3  # the lead, created first, then its children
    # 6 turns of 18 tokens: the lead 4 (create, wait, approve + wait, done), each child 1
    spend = page.eval("[...document.querySelectorAll('#creators tr')].map(r => r.innerText)")
    assert spend[1].split("\t")[:4] == ["alice", "3", "6 unpriced", "108"], spend
    assert spend[2].split("\t")[:4] == ["all", "3", "6 unpriced", "108"], spend
    page.click("#tree .row .name")  # the lead
    detail = page.text("#detail")
    lines = [line for line in detail.splitlines() if line.strip()]
    assert lines[lines.index("cost") + 1] == "72 tokens · 4 rounds · unpriced", lines
    newest = max(t.created_at for t in read_world(keep / "demo.db").tasks)
    header = page.text("header.page .sub")
    assert "world time" not in header and header.split(" · as of ")[1] >= utc(newest)
    assert_clean(page, out)


@pytest.mark.rule("VEW-1")
def test_ten_thousand_tasks_stay_usable(page: Page, tmp_path: Path) -> None:
    world = fleet_world(10_000)
    out = view(tmp_path, database(tmp_path, world))
    assert out.stat().st_size < 5_000_000
    loaded(page, out)
    assert page.text("#shown-count") == "10000 of 10000 tasks shown"
    drawn = len(rows(page))
    assert 20 <= drawn <= 150  # a virtual list: only the rows in sight are in the page
    assert page.eval("document.getElementById('tree-spacer').style.height") == f"{10_000 * 24}px"
    for _ in range(3):  # a person scrolls down with the wheel
        page.wheel("#tree", 4000)
    page.settle()
    assert page.eval("document.getElementById('tree').scrollTop") > 0
    assert rows(page)[0] != "t00000" and len(rows(page)) <= 150
    page.eval("document.getElementById('tree').scrollTop = 1e9")  # the end of the list
    page.settle()
    last = rows(page)[-1]
    assert last.startswith("t0") and last > "t09900"
    page.type("#search", "t09999")
    page.settle()
    found = rows(page)
    assert found[-1] == "t09999" and len(found) <= 4  # the task and its ancestors
    page.click("#tree .row .tid", len(found) - 1)
    assert "t09999" in page.text("#detail")
    # an interrupted task: its attempt with the resume reason, its cost
    page.eval("document.getElementById('search').select()")
    page.send("Input.insertText", {"text": "t00018"})
    page.settle()
    page.click("#tree .row .tid", len(rows(page)) - 1)
    detail = page.text("#detail")
    assert "interrupted t00018" in detail.replace("\n", " ")
    assert "platform_fresh\tworker restarted" in detail and "1018 tokens" in detail
    page.eval("document.getElementById('search').select()")
    page.key("Delete")  # clear the field as a person would
    page.settle()
    assert page.text("#shown-count") == "10000 of 10000 tasks shown"
    page.click("#collapse-all")
    page.settle()
    roots = sum(1 for t in world.tasks if t.parent_task_id is None)
    assert page.text("#shown-count") == f"{roots} of 10000 tasks shown"
    picture(page, tmp_path, "fleet-10000")
    assert_clean(page, out)


@pytest.mark.rule("VEW-3")
@pytest.mark.parametrize("policy", ["with-csp", "escaping-alone"])
def test_a_hostile_fleet_runs_no_script(page: Page, tmp_path: Path, policy: str) -> None:
    world = hostile_world()
    if policy == "with-csp":
        out = view(tmp_path, database(tmp_path, world))
    else:
        out = tmp_path / "fleet-no-csp.html"
        out.write_text(render_fleet(fleet_model(world), csp=False), encoding="utf-8")
        assert "Content-Security-Policy" not in out.read_text(encoding="utf-8")
    loaded(page, out)
    count = len(rows(page))
    assert count == len(HOSTILE) + 1
    for n in range(count):  # hover and click every row, then everything in its detail
        page.hover("#tree .row .name", n)
        page.click("#tree .row .name", n)
        page.settle()
        for k in range(int(page.eval("document.querySelectorAll('#detail button, #detail pre, #detail td').length"))):
            page.hover("#detail button, #detail pre, #detail td", k)
        if page.eval("document.querySelector('#detail button[data-goto]') !== null"):
            page.click("#detail button[data-goto]")
    for n in range(int(page.eval("document.querySelectorAll('#creators td, #creator option').length"))):
        page.hover("#creators td, #creator option", n)
    page.settle()
    assert page.eval(f"typeof {CANARY}") == "undefined"
    injected = "[onmouseover],[onclick],[onerror],[onload],img,a,iframe,object,embed,b"
    assert page.eval(f"document.querySelectorAll({json.dumps(injected)}).length") == 0
    assert page.eval("document.scripts.length") == 2  # the JSON island and the page's script
    page.click("#tree .row .name", 0)
    seen = page.eval("document.body.innerText")
    for text in (HOSTILE[0], HOSTILE[3], HOSTILE[5]):  # shown as text, verbatim
        assert text in seen
    picture(page, tmp_path, f"fleet-hostile-{policy}")
    assert_clean(page, out)


# ---- the run -------------------------------------------------------------------------


@pytest.mark.rule("VEW-2")
def test_the_demo_run_timeline_as_a_person_uses_it(page: Page, tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = demo_run(state)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in state.iterdir())
    out = run_page(tmp_path, state, run_id)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in state.iterdir()) == before  # read-only
    loaded(page, out)
    lanes = page.eval("[...document.querySelectorAll('#timeline g.lane .lane-name')].map(e => e.textContent)")
    assert lanes == ["run", "reader", "fixer", "docs"]
    outcomes = page.eval("[...document.querySelectorAll('#timeline g.turn rect')].map(e => e.getAttribute('class'))")
    assert outcomes == ["o-completed", "o-completed", "o-completed", "o-failed", "o-interrupted", "o-live"]
    kinds = set(page.eval("[...document.querySelectorAll('#timeline g.mark')].map(e => e.dataset.kind)"))
    assert {"decision", "dispatch", "pause", "resume", "alert", "quota"} <= kinds
    assert "The run is not finished" in page.text("#live-banner")
    # select the reader's second turn: its instruction and the head of its reply
    page.click("#timeline g.turn", 2)
    detail = page.text("#turn-detail")
    assert detail.startswith("reader · turn 2 · completed")
    assert page.text("#turn-detail pre.instruction") == "Show the failing test output and the smallest fix."
    assert page.text("#turn-detail pre.reply").startswith("FAILED test_last_line")
    assert page.eval("document.querySelectorAll('#timeline g.turn.sel').length") == 1
    picture(page, tmp_path, "run-demo-turn")
    # the live turn, chosen with the keyboard
    page.eval("document.querySelectorAll('#timeline g.turn')[5].focus()")
    page.key("Enter")
    assert page.text("#turn-detail").startswith("fixer · turn 3 · live")
    assert "still running" in page.text("#turn-detail")
    # a mark: the dispatch that sent the fixer's second instruction
    dispatch = page.eval("[...document.querySelectorAll('#timeline g.mark')].findIndex(g => g.dataset.kind === 'dispatch' && g.textContent.includes('off-by-one'))")
    page.click("#timeline g.mark", dispatch)
    assert "Fix only the off-by-one in parse.py line 3" in page.text("#turn-detail")
    assert_clean(page, out)


@pytest.mark.rule("VEW-2")
def test_a_200_turn_run(page: Page, tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = long_run(state)
    out = run_page(tmp_path, state, run_id)
    loaded(page, out)
    assert page.eval("document.querySelectorAll('#timeline g.turn').length") == 200
    assert page.eval("document.querySelectorAll('#timeline g.lane').length") == 4
    page.click("#timeline g.turn", 199)
    store = PlanStore(state)
    model = run_model(store.load_current(run_id), store.read_events(run_id))
    last = model.bars[199]
    assert page.text("#turn-detail").startswith(f"{last.role} · turn {last.number} · {last.outcome}")
    assert page.text("#turn-detail pre.instruction") == last.instruction
    picture(page, tmp_path, "run-200")
    assert_clean(page, out)


@pytest.mark.rule("VEW-3")
@pytest.mark.parametrize("policy", ["with-csp", "escaping-alone"])
def test_a_hostile_run_runs_no_script(page: Page, tmp_path: Path, policy: str) -> None:
    state = tmp_path / "state"
    run_id = hostile_run(state)
    if policy == "with-csp":
        out = run_page(tmp_path, state, run_id)
    else:
        store = PlanStore(state)
        model = run_model(store.load_current(run_id), store.read_events(run_id))
        out = tmp_path / "run-no-csp.html"
        out.write_text(render_run(model, csp=False), encoding="utf-8")
    loaded(page, out)
    for selector in ("#timeline g.lane text", "#timeline g.turn", "#timeline g.mark"):
        for n in range(int(page.eval(f"document.querySelectorAll({json.dumps(selector)}).length"))):
            page.hover(selector, n)
            page.click(selector, n)
            for k in range(int(page.eval("document.querySelectorAll('#turn-detail pre').length"))):
                page.hover("#turn-detail pre", k)
    page.settle()
    assert page.eval(f"typeof {CANARY}") == "undefined"
    injected = "[onmouseover],[onclick],[onerror],[onload],img,a,iframe,object,embed,b"
    assert page.eval(f"document.querySelectorAll({json.dumps(injected)}).length") == 0
    assert page.eval("document.scripts.length") == 2
    lanes = page.eval("[...document.querySelectorAll('#timeline g.lane title')].map(e => e.textContent)")
    assert lanes[0].startswith(HOSTILE[0])  # the role name, as text
    page.click("#timeline g.turn", 0)
    assert page.text("#turn-detail pre.instruction") == HOSTILE[1]
    reply = page.text("#turn-detail pre.reply")
    assert reply.startswith(HOSTILE[0] + "\n" + HOSTILE[1]) and len(reply) <= 1200
    picture(page, tmp_path, f"run-hostile-{policy}")
    assert_clean(page, out)


# ---- the harness checks what it claims to check ----------------------------------------


@pytest.mark.rule("VEW-1", "VEW-3")
def test_the_harness_sees_a_request_an_error_and_an_injection(page: Page, tmp_path: Path) -> None:
    """Without this, "no request", "no error" and "canary unset" could pass vacuously."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><p>x</p>"
        '<img src="http://198.51.100.7/pixel.png">'
        "<script>console.error('boom'); window.__pwned = 1;"
        "document.documentElement.dataset.ready = '1';</script></body></html>",
        encoding="utf-8",
    )
    page.open(bad)
    page.settle()
    assert "http://198.51.100.7/pixel.png" in page.requests  # attempted (and blocked)
    assert any("boom" in e for e in page.errors)
    assert page.eval(f"typeof {CANARY}") == "number"


# ---- approval requests on the fleet page (APR-4) ----------------------------------------


@pytest.mark.rule("APR-4", "VEW-1", "VEW-3")
def test_the_fleet_shows_who_waits_for_an_approval(page: Page, tmp_path: Path) -> None:
    from markertools import ApprovalRequest, Task
    from markertools.domain.model import Project
    from markertools_adapters.sqlite import SqliteStore

    now = 1_798_333_200.0
    db = database(
        tmp_path,
        World(
            now=now,
            projects=(Project("p1", "shop"),),
            tasks=(
                Task("t-lead", "p1", status="running", created_by="ana", prompt="lead"),
                Task("t-kid", "p1", status="running", created_by="ana", parent_task_id="t-lead", prompt="tests", worktree="/w/h1/t-kid"),
                Task("t-done", "p1", status="running", created_by="ana", parent_task_id="t-lead", prompt="docs"),
            ),
        ),
    )
    with SqliteStore(db) as store:
        store.insert_approval(ApprovalRequest("apr-1", "t-kid", "?", "command", ("uv", "run", "pytest", HOSTILE[0]), "/w/h1/t-kid", reason=HOSTILE[3], asked_at=now + 5, expires_at=now + 905))
        store.insert_approval(ApprovalRequest("apr-2", "t-kid", "?", "file_change", None, "/w/h1/t-kid", ("/w/h1/t-kid/a.py",), "+3 -1", asked_at=now + 6, expires_at=now + 906))
        store.insert_approval(ApprovalRequest("apr-3", "t-done", "?", "command", ("make",), asked_at=now + 1, expires_at=now + 901))
        store.answer_approval("apr-3", "approved", answered_by="person:ana", reason="fine", now=now + 2)
    out = view(tmp_path, db)
    loaded(page, out)
    assert page.text("#approvals-pending") == "approval requests awaiting an answer (APR-4)\t2\tmarkertools approvals list"
    badges = page.eval("[...document.querySelectorAll('#tree .row')].map(r => [r.querySelector('.tid').textContent, (r.querySelector('.cap.approval') || {}).textContent || ''])")
    assert badges == [["t-lead", ""], ["t-done", ""], ["t-kid", "2 awaiting approval"]]
    page.click("#tree .row .name", 2)
    detail = page.text("#detail")
    assert "approval requests" in detail
    lines = detail.splitlines()
    at = lines.index("approval requests")
    assert lines[at + 1] == "id\tkind\tasks for\tstatus\tanswered by\tasked\treason"
    assert lines[at + 2] == "apr-2\tfile_change\t/w/h1/t-kid/a.py (+3 -1)\tpending\t\t2026-12-27 01:00:06 UTC\t"
    assert lines[at + 3].startswith("apr-1\tcommand\tuv run pytest '<script>window.__pwned=1</script>' (in /w/h1/t-kid)\tpending")
    assert lines[at + 3].endswith(HOSTILE[3])
    for k in range(int(page.eval("document.querySelectorAll('#detail td').length"))):
        page.hover("#detail td", k)
    page.click("#tree .row .name", 1)
    assert "apr-3\tcommand\tmake\tapproved\tperson:ana" in page.text("#detail")
    assert page.eval(f"typeof {CANARY}") == "undefined"
    picture(page, tmp_path, "fleet-approvals")
    assert_clean(page, out)
