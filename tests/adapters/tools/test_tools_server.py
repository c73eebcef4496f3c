"""`tools serve` driven in-process by the SDK's own MCP client, in both protocol eras,
over a real SQLite store: the fifteen tools and their schemas (TOL-1), every tool
delivered for the bound task (TOL-2), the token checked at every call (TOL-3), the caps
shared across calls (TOL-4), exactly once (TOL-5), goal tasks refused (TOL-7), and
hostile arguments: each the one documented tool error, the server alive, nothing
changed."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from tools_support import (
    ERAS,
    VALID,
    TokenHolder,
    body,
    call,
    client,
    mint,
    sqlite_store,
    text,
    tools_server,
    unchanged,
)

from markertools import TOOL_NAMES, body_schema, revoke_task_tokens
from markertools_adapters.tools import ToolsMcp


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = sqlite_store(tmp_path / "w.db")
    yield s
    s.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.rule("TOL-1")
@pytest.mark.parametrize("mode", ERAS)
def test_fifteen_tools_named_by_kind_with_the_kind_schema_and_guide_text(
    store: Any, mode: str
) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    async def scenario() -> Any:
        async with client(tools, mode) as c:
            return (await c.list_tools()).tools

    listed = {t.name: t for t in run(scenario())}
    assert sorted(listed) == sorted(TOOL_NAMES) and len(listed) == 15
    assert "read_thread" not in listed and "task_read" not in listed  # aliases are no tools
    for name, tool in listed.items():
        schema = dict(body_schema(name.replace("_", "-")))
        schema.pop("$schema")
        assert tool.input_schema == schema
    poll = listed["task_poll"]
    assert poll.description is not None
    assert poll.description.startswith(
        "task-poll — read a task's status and latest output, optionally waiting for it to finish"
    )
    assert "As a tool, the result comes back in this same call" in poll.description
    assert "```task-poll" not in poll.description  # the block example is left out
    assert listed["task_create"].annotations is not None
    assert listed["task_create"].annotations.read_only_hint is False
    assert listed["task_list"].annotations.read_only_hint is True  # type: ignore[union-attr]


@pytest.mark.rule("TOL-1")
def test_descriptions_follow_the_server_locale(store: Any) -> None:
    tools = ToolsMcp(store, store.ports, locale="zh", token_of=TokenHolder(None))

    async def scenario() -> Any:
        async with client(tools) as c:
            return (await c.list_tools()).tools

    poll = {t.name: t for t in run(scenario())}["task_poll"]
    assert poll.description is not None and "读取一个任务的状态" in poll.description
    assert "作为工具调用时，结果在本次调用中直接返回" in poll.description


@pytest.mark.rule("TOL-2")
@pytest.mark.parametrize("mode", ERAS)
def test_every_tool_answers_in_the_same_call_for_the_bound_task(store: Any, mode: str) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "t1")))
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with client(tools, mode) as c:
            made = await call(c, "task_create", {"prompt": "write the changelog"})
            seen["create"] = made
            new_id = body(made)["task_id"]
            seen["poll_new"] = await call(c, "task_poll", {"task_id": new_id})
            todo = await call(c, "todo_create", {"title": "review"})
            seen["todo"] = todo
            seen["todo_update"] = await call(
                c, "todo_update", {"id": body(todo)["target"], "status": "completed"}
            )
            for tool, args in [
                ("todo_list", {"status": "completed"}),
                ("task_list", {}),
                ("task_cost", {"task_id": "t3"}),
                ("quota_status", {}),
                ("task_files", {"task_id": "t3"}),
                ("task_retry", {"task_id": "t3"}),
                ("automation_create", {"name": "n", "prompt": "p", "schedule": "every day"}),
                ("wait_threads", {"task_ids": ["t3"]}),
                ("task_cancel", {"task_id": "t2"}),
                ("goal_convert", {"goal": "ship it"}),
            ]:
                seen[tool] = await call(c, tool, args)

    run(scenario())
    made = body(seen["create"])
    assert made["kind"] == "task-create" and made["outcome"] == "done"
    assert made["target"] == made["task_id"] and made["replayed"] is False
    assert text(seen["create"]) == made["text"]  # content and structuredContent agree
    assert text(seen["create"]).startswith(f"task-create → {made['task_id']}: done")
    child = store.get_task(made["task_id"])
    assert child.parent_task_id == "t1" and child.status == "queued"  # acted for t1
    assert body(seen["poll_new"])["task"]["status"] == "queued"
    assert body(seen["todo_update"])["outcome"] == "done"
    assert "review" in text(seen["todo_list"])
    assert "by status" in text(seen["task_list"])
    assert text(seen["task_cost"]).startswith("task-cost → t3: done")
    assert text(seen["quota_status"]).startswith("quota-status: done")
    files = seen["task_files"]
    assert files.is_error and "no worktree resolver is configured" in text(files)
    retry = seen["task_retry"]
    assert retry.is_error and body(retry)["outcome"] == "rejected"
    assert "only failed, interrupted or merge-failed tasks can be retried" in text(retry)
    assert body(seen["automation_create"])["outcome"] == "done"
    assert body(seen["wait_threads"])["tasks"][0]["status"] == "completed"
    assert store.get_task("t2").status == "interrupted"  # task_cancel
    assert "It takes effect after this turn" in text(seen["goal_convert"])
    sources = {r.source for r in store.export_world(store.ports.clock.now()).audit}
    assert sources == {"tool"}  # one audit record per executed call, noted as a tool call


@pytest.mark.rule("TOL-2")
def test_another_projects_task_is_refused_with_the_block_reason(store: Any) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    async def scenario() -> Any:
        async with client(tools) as c:
            return await call(c, "task_cancel", {"task_id": "t9"})

    with unchanged(store, audited=1):
        result = run(scenario())
    assert result.is_error
    assert text(result) == (
        "task-cancel → t9: rejected\n"
        "task t9 belongs to another project; markers never act outside your own project"
    )


# ---- binding (TOL-3) ---------------------------------------------------------------------


def _refusals(store: Any, holder: TokenHolder, tools: ToolsMcp) -> list[str]:
    async def scenario() -> list[str]:
        out = []
        async with client(tools) as c:
            for tool, args in [
                ("task_create", {"prompt": "x"}),
                ("task_cancel", {"task_id": "t2"}),
                ("task_list", {}),
            ]:
                result = await call(c, tool, args)
                assert result.is_error and body(result)["outcome"] == "rejected"
                assert body(result)["target"] is None
                out.append(text(result))
        return out

    with unchanged(store):
        return run(scenario())


@pytest.mark.rule("TOL-3")
def test_every_bad_token_is_refused_naming_why_and_never_echoed(
    store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    good = mint(store, "t1")
    holder = TokenHolder()
    tools = tools_server(store, holder)
    cases = {
        None: "not authorised: no token",
        "mtt_" + "0" * 64: "not authorised: unknown token",  # guessed
        good[:-1] + ("0" if good[-1] != "0" else "1"): "not authorised: unknown token",
    }
    expired = mint(store, "t1", ttl=0.001)
    cases[expired] = "not authorised: token expired"
    revoked = mint(store, "t2")
    revoke_task_tokens(store, "t2")
    cases[revoked] = "not authorised: token revoked"
    for token, why in cases.items():
        holder.token = token
        assert _refusals(store, holder, tools) == [why] * 3
    shown = json.dumps([r.getMessage() for r in caplog.records])
    for token in [good, expired, revoked]:
        assert token not in shown and token[4:20] not in shown


@pytest.mark.rule("TOL-3")
def test_a_task_that_stops_running_is_refused_from_its_next_call(store: Any) -> None:
    holder = TokenHolder(mint(store, "t1"))
    tools = tools_server(store, holder)
    other = TokenHolder(mint(store, "t9"))  # another task's token binds that task only

    async def first() -> Any:
        async with client(tools) as c:
            return await call(c, "todo_create", {"title": "before"})

    assert body(run(first()))["outcome"] == "done"
    store.transition_task("t1", "running", {"status": "completed"})
    assert (
        _refusals(store, holder, tools)
        == [
            "not authorised: token revoked"  # leaving running revoked the task's tokens
        ]
        * 3
    )
    tools9 = tools_server(store, other)

    async def as_t9() -> Any:
        async with client(tools9) as c:
            return await call(c, "task_cancel", {"task_id": "t2"})

    with unchanged(store, audited=1):
        refused = run(as_t9())
    assert refused.is_error and "belongs to another project" in text(refused)


# ---- caps, exactly once, goal tasks (TOL-4, TOL-5, TOL-7) --------------------------------


@pytest.mark.rule("TOL-4")
def test_the_turn_cap_holds_across_calls(store: Any) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    async def scenario() -> list[Any]:
        async with client(tools) as c:
            return [await call(c, "wait_threads", {"task_ids": ["t3"]}) for _ in range(3)]

    results = run(scenario())
    assert [body(r)["outcome"] for r in results] == ["done", "done", "ignored"]
    assert text(results[2]) == (
        "wait-threads: ignored\nover the per-turn cap: at most 2 wait-threads block(s) run "
        "per turn (wait-threads, wait_threads count together); this was block 3, so it was "
        "ignored"
    )


@pytest.mark.rule("TOL-5")
@pytest.mark.parametrize("mode", ERAS)
def test_a_repeated_call_id_is_applied_once_and_replayed(store: Any, mode: str) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    async def scenario() -> list[Any]:
        async with client(tools, mode) as c:
            args = {"prompt": "exactly once"}
            return [await call(c, "task_create", args, call_id="k-1") for _ in range(3)]

    first, *again = run(scenario())
    assert body(first)["replayed"] is False
    for result in again:
        assert body(result)["replayed"] is True
        assert body(result)["task_id"] == body(first)["task_id"]
    tasks = store.export_world(store.ports.clock.now()).tasks
    made = [t for t in tasks if t.prompt == "exactly once"]
    assert len(made) == 1


@pytest.mark.rule("FLT-6")
@pytest.mark.parametrize("mode", ERAS)
def test_a_call_id_reused_with_other_arguments_is_refused_and_changes_nothing(
    store: Any, mode: str
) -> None:
    """The same `_meta["markertools/callId"]` with different arguments, through the SDK's
    own client: the agent reads a refusal naming the reused call id, nothing is run or
    replayed (no second task), and the first arguments still replay."""
    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    async def first() -> Any:
        async with client(tools, mode) as c:
            return await call(c, "task_create", {"prompt": "exactly once"}, call_id="k-1")

    async def reused() -> Any:
        async with client(tools, mode) as c:
            return await call(c, "task_create", {"prompt": "something else"}, call_id="k-1")

    async def same_again() -> Any:
        async with client(tools, mode) as c:
            return await call(c, "task_create", {"prompt": "exactly once"}, call_id="k-1")

    made = body(run(first()))["task_id"]
    with unchanged(store):
        refused = run(reused())
    assert refused.is_error
    said = text(refused)
    assert said.startswith(
        "call id 'k-1' of task 't1' was already used with other arguments (stored digest args:"
    ), said
    assert said.endswith("nothing was run or replayed; give each call its own id"), said
    assert body(refused)["outcome"] == "rejected"
    assert body(refused)["reason"] == said and body(refused)["target"] is None
    assert body(refused)["replayed"] is False and "task_id" not in body(refused)
    tasks = store.export_world(store.ports.clock.now()).tasks
    assert [t.id for t in tasks if t.prompt == "exactly once"] == [made]
    assert not [t for t in tasks if t.prompt == "something else"]
    with unchanged(store):
        again = run(same_again())
    assert body(again)["replayed"] is True and body(again)["task_id"] == made


@pytest.mark.rule("TOL-7")
def test_a_goal_task_is_refused_every_tool(store: Any) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "g1")))

    async def scenario() -> list[Any]:
        async with client(tools) as c:
            return [await call(c, name, {}) for name in TOOL_NAMES]

    with unchanged(store):
        results = run(scenario())
    for result in results:
        assert result.is_error
        assert text(result).endswith("goal and coordinator tasks never run marker blocks")


# ---- hostile input -----------------------------------------------------------------------

HOSTILE: list[tuple[str, Any, str]] = [  # tool, arguments, what the refusal names
    ("task_poll", {"task_id": 5}, "field 'task_id' is 5; expected a task id string"),
    ("task_create", {"prompt": ["x"]}, "field 'prompt'"),
    ("todo_update", {"id": "x", "status": "done"}, "field 'status'"),
    ("wait_threads", {"task_ids": "t3"}, "field 'task_ids'"),
    ("task_list", {"limit": "ten"}, "field 'limit'"),
    ("task_create", {"prompt": "x" * 10_000_000}, "longer than a block body may be (262144"),
]


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.rule("TOL-2")
def test_hostile_arguments_are_tool_errors_naming_the_field_or_limit(store: Any) -> None:
    tools = tools_server(store, TokenHolder(mint(store, "t1")))
    cases = [
        *HOSTILE,
        ("task_create", {"prompt": "x", "deep": _nested(200)}, "deeper than"),
    ]

    async def scenario() -> list[Any]:
        async with client(tools) as c:
            out = [await call(c, tool, args) for tool, args, _ in cases]
            out.append(await call(c, "no_such_tool", {}))
            out.append(await call(c, "task_list", {}))  # still alive (its audit record)
            return out

    with unchanged(store, audited=1):
        results = run(scenario())
    *refused, unknown, alive = results
    for (tool, _, why), result in zip(cases, refused, strict=True):
        assert result.is_error, (tool, text(result))
        assert body(result)["outcome"] == "skipped"
        assert why in text(result), text(result)
        assert len(text(result)) < 2000  # a 10 MB value is never echoed
    assert unknown.is_error and "no_such_tool" in text(unknown)
    assert not alive.is_error


@pytest.mark.rule("TOL-2")
def test_a_flood_of_calls_leaves_the_server_answering(store: Any) -> None:
    # all 200 at once for one token: the token's bound on calls at once (TOL-11, tested
    # in test_tools_fair.py) raised past the flood, so every call reaches delivery
    tools = tools_server(store, TokenHolder(mint(store, "t1")), max_calls_per_token=256)

    async def scenario() -> list[Any]:
        async with client(tools) as c:
            flood = [call(c, "task_create", {"prompt": n}) for n in range(200)]
            done = list(await asyncio.gather(*flood))
            done.append(await call(c, "todo_list", {}))
            return done

    with unchanged(store, audited=1):
        *results, alive = run(scenario())
    assert len(results) == 200
    outcomes = [body(r)["outcome"] for r in results]
    # each counts toward the turn's cap before it is validated: the first ones are
    # skipped naming the field, the rest ignored over the cap; none is applied
    assert set(outcomes) == {"skipped", "ignored"}
    for result in results:
        if body(result)["outcome"] == "skipped":
            assert "field 'prompt' is" in text(result)
        else:
            assert "over the per-turn cap: at most" in text(result)
    assert body(alive)["outcome"] == "done"


# every field of every tool, given a value of the wrong type: skipped naming that field
_WRONG: dict[str, Any] = {
    "string": 12345,
    "integer": "x",
    "number": "x",
    "array": "x",
    "boolean": "x",
    "object": "x",
    "null": "x",
}


def _wrong_value(prop: dict[str, Any]) -> Any:
    kind = prop.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind is None:  # an enum, or a choice of forms (a time: a number or a string)
        return 12345 if "enum" in prop else []
    return _WRONG[kind]


def _field_cases() -> list[tuple[str, str, dict[str, Any]]]:
    cases = []
    for tool in TOOL_NAMES:
        props = body_schema(tool.replace("_", "-")).get("properties", {})
        for name, prop in props.items():
            alias = str(prop.get("description", "")).startswith("Alias of")
            base = {} if alias else VALID.get(tool, {})
            cases.append((tool, name, {**base, name: _wrong_value(prop)}))
    return cases


@pytest.mark.rule("TOL-2")
def test_a_wrong_type_in_any_field_of_any_tool_is_skipped_naming_the_field(
    store: Any, tmp_path: Path
) -> None:
    import sqlite3

    cases = _field_cases()
    assert len({tool for tool, _, _ in cases}) == 14  # every tool but quota_status has fields
    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    def next_turn() -> None:  # what a worker's claim does: the caps start again
        with sqlite3.connect(tmp_path / "w.db") as conn:
            conn.execute("UPDATE tasks SET turn = turn + 1 WHERE id = 't1'")

    async def scenario() -> list[Any]:
        out = []
        async with client(tools) as c:
            for tool, _, args in cases:
                await asyncio.to_thread(next_turn)
                out.append(await call(c, tool, args))
        return out

    results = run(scenario())
    for (tool, name, args), result in zip(cases, results, strict=True):
        assert result.is_error and body(result)["outcome"] == "skipped", (tool, args)
        assert f"field '{name}'" in text(result), (tool, name, text(result))


@pytest.mark.rule("TOL-4")
def test_calls_through_the_server_use_up_the_caps_of_the_turns_blocks(store: Any) -> None:
    from markertools import deliver_turn

    tools = tools_server(store, TokenHolder(mint(store, "t1")))

    async def scenario() -> list[Any]:
        async with client(tools) as c:
            return [await call(c, "wait_threads", {"task_ids": ["t3"]}) for _ in range(2)]

    assert [body(r)["outcome"] for r in run(scenario())] == ["done", "done"]
    report = deliver_turn(
        '```wait-threads\n{"task_ids": ["t3"]}\n```',
        sender="t1",
        outcome="completed",
        ports=store.ports,
    )
    (entry,) = report.entries
    assert entry.outcome == "ignored"
    assert entry.reason.render().startswith(
        "over the per-turn cap: at most 2 wait-threads block(s) run per turn"
    )
