"""DOT-15 through MCP: a run belongs to the conversation that started it. With neither
`_meta["markertools/conversation"]` nor `--conversation`, every connection is a fresh
conversation and another connection sees none of its runs ("run not found"); the
`_meta` key and `--conversation` carry a conversation across connections. A server
started inside a worker (MARKERTOOLS_DOTS_WORKER) refuses every mutating tool. A
replayed dots_dispatch with an old decision id is refused (PLN-7)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from support.codex import OfflineCodex
from support.dots import plan, role, workdir
from test_mcp_support import LEGACY, MODERN, Answers, call, client, make_dots, ok, refused

from markertools_adapters.codex.fakemodel import Text


def one_role(tmp: Path) -> dict[str, Any]:
    return plan(role("reader", workdir(tmp, "a")))


@pytest.mark.rule("DOT-15")
@pytest.mark.parametrize(
    ("first", "second"), [(LEGACY, LEGACY), (MODERN, LEGACY), (LEGACY, MODERN)]
)
def test_another_connection_sees_none_of_the_runs(
    offline_codex: OfflineCodex, tmp_path: Path, first: str, second: str
) -> None:
    offline_codex.fake.push(Text("reader: done"))
    dots = make_dots(offline_codex, tmp_path / "state")

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client(dots, first, Answers()) as a, client(dots, second, Answers()) as b:
            run_id = ok(await call(a, "dots_start", {"proposal": one_role(tmp_path)}))["runId"]
            pending = ok(await call(a, "dots_status", {"waitMs": 30_000}))["pendingDecisions"]
            decision = pending[0]["decisionId"]
            out["b_all"] = ok(await call(b, "dots_status"))
            out["b_one"] = refused(await call(b, "dots_status", {"runId": run_id}))
            out["b_dispatch"] = refused(
                await call(
                    b,
                    "dots_dispatch",
                    {
                        "runId": run_id,
                        "worker": "reader",
                        "instruction": "x",
                        "decisionId": decision,
                    },
                )
            )
            out["b_finish"] = refused(
                await call(b, "dots_finish", {"runId": run_id, "conclusion": "mine now"})
            )
            out["b_control"] = refused(
                await call(b, "dots_control", {"runId": run_id, "action": "cancel"})
            )
            out["a_after"] = ok(await call(a, "dots_status", {"runId": run_id}))
        return out

    out = asyncio.run(scenario())
    assert out["b_all"]["runs"] == [] and out["b_all"]["pendingDecisions"] == []
    for key, tool in (
        ("b_one", "dots_status"),
        ("b_dispatch", "dots_dispatch"),
        ("b_finish", "dots_finish"),
        ("b_control", "dots_control"),
    ):
        text, field = out[key]
        assert text.startswith(f"{tool}: runId: run not found: '"), text
        assert field == "runId"
    (run,) = out["a_after"]["runs"]
    assert run["state"] == "running"  # nothing the other connection sent changed it
    assert len(out["a_after"]["pendingDecisions"]) == 1


@pytest.mark.rule("DOT-15")
def test_meta_conversation_and_conversation_option_carry_across_connections(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("reader: done"))
    dots = make_dots(offline_codex, tmp_path / "state")

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with client(dots, LEGACY, Answers()) as a:
            view = ok(await call(a, "dots_start", {"proposal": one_role(tmp_path)}, "conv-1"))
            out["run"] = view["runId"]
        async with client(dots, MODERN, Answers()) as b:  # a later connection, other era
            out["same"] = ok(await call(b, "dots_status", {}, "conv-1"))
            out["other"] = ok(await call(b, "dots_status", {}, "conv-2"))
            out["none"] = ok(await call(b, "dots_status"))
            out["bad"] = refused(await call(b, "dots_status", {}, "  "))
        return out

    out = asyncio.run(scenario())
    assert [r["runId"] for r in out["same"]["runs"]] == [out["run"]]
    assert out["other"]["runs"] == [] and out["none"]["runs"] == []
    assert out["bad"] == (
        "dots_status: _meta.markertools/conversation must be a non-empty string of at most "
        "200 characters",
        "_meta.markertools/conversation",
    )

    keyed = make_dots(offline_codex, tmp_path / "state2", conversation="host-chat-7")

    async def keyed_scenario() -> tuple[Any, Any]:
        async with client(keyed, LEGACY, Answers()) as a:
            view = ok(await call(a, "dots_start", {"proposal": one_role(tmp_path / "k")}))
        async with client(keyed, MODERN, Answers()) as b:
            return view, ok(await call(b, "dots_status"))

    view, status = asyncio.run(keyed_scenario())
    assert [r["runId"] for r in status["runs"]] == [view["runId"]]


@pytest.mark.rule("DOT-15")
def test_a_server_inside_a_worker_refuses_every_mutating_tool(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    dots = make_dots(offline_codex, tmp_path / "state", worker="run-1:reader")
    calls = {
        "dots_start": {"proposal": one_role(tmp_path)},
        "dots_dispatch": {"runId": "r", "worker": "w", "instruction": "i", "decisionId": "d"},
        "dots_tune": {"runId": "r", "worker": "w", "changes": {"effort": "low"}},
        "dots_control": {"runId": "r", "action": "cancel"},
        "dots_finish": {"runId": "r", "conclusion": "c"},
    }

    async def scenario() -> dict[str, Any]:
        async with client(dots, LEGACY, Answers()) as c:
            out = {tool: refused(await call(c, tool, args)) for tool, args in calls.items()}
            out["status"] = ok(await call(c, "dots_status"))
            out["probe"] = ok(await call(c, "dots_probe"))
            return out

    out = asyncio.run(scenario())
    for tool in calls:
        assert out[tool] == (
            f"dots_{tool[5:]}: dots_{tool[5:]} is refused: this dots server runs inside worker "
            "run-1:reader of a dots run (MARKERTOOLS_DOTS_WORKER is set), and a worker cannot "
            "start or change any run",
            None,
        )
    assert out["status"]["runs"] == [] and out["probe"]["model"] == "fake-model"
    assert not (tmp_path / "state" / "host.lock").exists()  # the state dir was never opened
    assert offline_codex.fake.responses_requests() == []


@pytest.mark.rule("DOT-15", "PLN-7")
def test_a_replayed_dispatch_with_an_old_decision_id_is_refused(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    offline_codex.fake.push(Text("reader: first"), Text("reader: second"))
    dots = make_dots(offline_codex, tmp_path / "state")

    async def scenario() -> tuple[Any, Any, int]:
        async with client(dots, LEGACY, Answers()) as c:
            run_id = ok(await call(c, "dots_start", {"proposal": one_role(tmp_path)}))["runId"]
            (first,) = ok(await call(c, "dots_status", {"waitMs": 30_000}))["pendingDecisions"]
            args = {
                "runId": run_id,
                "worker": "reader",
                "instruction": "read it again",
                "decisionId": first["decisionId"],
            }
            ok(await call(c, "dots_dispatch", args))
            (second,) = ok(await call(c, "dots_status", {"waitMs": 30_000}))["pendingDecisions"]
            replay = refused(await call(c, "dots_dispatch", args))
            return replay, second, len(offline_codex.fake.responses_requests())

    (text, field), second, turns = asyncio.run(scenario())
    assert second["decisionId"] != "" and field == "decisionId"
    assert text.startswith("dots_dispatch: decisionId: decision id '")
    assert text.endswith("' is not the current decision of role 'reader'; refused as a replay")
    assert turns == 2  # the replay started no third turn


@pytest.mark.rule("DOT-13", "DOT-15")
def test_a_server_inside_a_worker_reads_no_threads_of_the_machine(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """Issue 26 item 9: a worker has no business listing or reading the machine's
    threads (other projects' conversations)."""
    dots = make_dots(offline_codex, tmp_path / "state", worker="run-1:reader")

    async def scenario() -> dict[str, Any]:
        async with client(dots, LEGACY, Answers()) as c:
            return {
                "threads": refused(await call(c, "dots_threads")),
                "read": refused(await call(c, "dots_thread_read", {"threadId": "t"})),
            }

    out = asyncio.run(scenario())
    for tool, key in (("dots_threads", "threads"), ("dots_thread_read", "read")):
        assert out[key] == (
            f"{tool}: {tool} is refused inside worker run-1:reader of a dots run: a worker "
            "reads no threads of this machine",
            None,
        )
