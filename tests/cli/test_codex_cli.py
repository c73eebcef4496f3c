"""The Codex CLI surface: `parse --codex-events/--codex-rollout` (listing and --turn) and
`deliver --codex-events`, plus codex_turn_for_delivery on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
from support.strategies.codex import APPSERVER_STREAM, ROLLOUT, agent_item, line, turn_completed
from typer.testing import CliRunner

from markertools_adapters.cli import app
from markertools_adapters.cli.cmd_codex import codex_turn_for_delivery

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def _stderr(result: Any) -> str:
    return result.stderr if result.stderr_bytes is not None else result.output


# ---- codex_turn_for_delivery ------------------------------------------------------------


@pytest.mark.rule("TRN-3")
def test_delivery_defaults_to_the_last_completed_turn() -> None:
    text, outcome = codex_turn_for_delivery(APPSERVER_STREAM, None)
    assert outcome == "completed"
    assert text.startswith("Thread b, first part.")  # turn_b1; turn_a3 (failed) came later


@pytest.mark.rule("TRN-3")
def test_delivery_of_a_named_turn_carries_its_status() -> None:
    assert codex_turn_for_delivery(APPSERVER_STREAM, "turn_a2")[1] == "interrupted"
    assert codex_turn_for_delivery(APPSERVER_STREAM, "turn_a3")[1] == "failed"
    assert codex_turn_for_delivery(APPSERVER_STREAM, "turn_b2")[1] == "unfinished"
    assert codex_turn_for_delivery(APPSERVER_STREAM, "thr_a/turn_a1")[1] == "completed"


@pytest.mark.rule("TRN-3")
def test_a_completed_turn_overlapping_a_malformed_line_is_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        line(agent_item("t", "u", "m", "x")) + "{broken\n" + line(turn_completed("t", "u"))
    )
    assert codex_turn_for_delivery(path, None) == ("x", "incomplete")


def _exit_code(fn: Any, *args: Any) -> int:
    with pytest.raises(typer.Exit) as info:
        fn(*args)
    return int(info.value.exit_code)


def test_delivery_usage_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_completed = tmp_path / "open.jsonl"
    no_completed.write_text(line(agent_item("t", "u", "m", "x")))
    for args in (
        (tmp_path / "missing.jsonl", None),
        (APPSERVER_STREAM, "no_such_turn"),
        (no_completed, None),
    ):
        assert _exit_code(codex_turn_for_delivery, *args) == 2
        err = capsys.readouterr().err
        assert err.startswith("markertools: ") and err.count("\n") == 1
    assert _exit_code(codex_turn_for_delivery, tmp_path / "missing.jsonl", None) == 2
    assert "cannot read" in capsys.readouterr().err


def test_ambiguous_turn_id_asks_for_the_thread(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(
            line(m)
            for m in (
                agent_item("A", "u", "m", "from A"),
                turn_completed("A", "u"),
                agent_item("B", "u", "m", "from B"),
                turn_completed("B", "u"),
            )
        )
    )
    assert _exit_code(codex_turn_for_delivery, path, "u") == 2
    assert "THREAD/u" in capsys.readouterr().err
    assert codex_turn_for_delivery(path, "B/u") == ("from B", "completed")


# ---- parse --codex-events / --codex-rollout ---------------------------------------------


def _listing(*args: str) -> dict[str, Any]:
    result = invoke("parse", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_listing_json_shape_for_an_app_server_stream() -> None:
    listing = _listing("--codex-events", str(APPSERVER_STREAM))
    assert set(listing) == {"turns", "problems"}
    assert all(
        set(t) == {"thread_id", "turn_id", "status", "blocks", "error"} for t in listing["turns"]
    )
    assert [(t["turn_id"], t["status"], t["blocks"], t["error"]) for t in listing["turns"]] == [
        ("turn_a1", "completed", 2, None),
        ("turn_a2", "interrupted", 1, None),
        ("turn_b1", "completed", 1, None),
        ("turn_a3", "failed", 1, "You've hit your usage limit."),
        ("turn_b2", "inProgress", 0, None),
    ]
    assert listing["problems"] == []


def test_listing_for_a_rollout_and_its_zst(tmp_path: Path) -> None:
    import zstandard

    listing = _listing("--codex-rollout", str(ROLLOUT))
    assert [(t["status"], t["blocks"]) for t in listing["turns"]] == [
        ("completed", 2),
        ("interrupted", 1),
        ("failed", 1),
        ("completed", 1),
        ("inProgress", 1),
    ]
    packed = tmp_path / (ROLLOUT.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(ROLLOUT.read_bytes()))
    assert _listing("--codex-rollout", str(packed)) == listing


def test_listing_reports_problems_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        line(agent_item("t", "u", "m", "x")).encode()
        + b"\xff\xfe not json\n"
        + line(turn_completed("t", "u")).encode()
        + b'{"method": "turn/comp'
    )
    listing = _listing("--codex-events", str(path))
    assert [p["line"] for p in listing["problems"]] == [2, 4]
    assert all(isinstance(p["reason"], str) and p["reason"] for p in listing["problems"])
    text = invoke("parse", "--codex-events", str(path))
    assert text.exit_code == 0
    assert "not deliverable" in text.stdout and "line 4:" in text.stdout


def test_text_listing_keeps_hostile_ids_and_errors_on_one_line(tmp_path: Path) -> None:
    """Ids, errors and problem reasons come from the file: a newline in them cannot add
    a forged row or problem line, and a terminal escape sequence is shown, not sent."""
    forged = "u\n  line 99: all good, deliver me\x1b[2J"
    path = tmp_path / "s.jsonl"
    path.write_text(
        line(agent_item("thr\nx", forged, "m", "hello"))
        + line(turn_completed("thr\nx", forged, "failed", "boom\x1b]0;pwned\x07\nline 2"))
        + line({"method": "turn/completed", "params": {"threadId": "t", "turn": {"id": forged}}})
    )
    listing = _listing("--codex-events", str(path))
    assert listing["turns"][0]["turn_id"] == forged  # JSON keeps the value as it is
    text = invoke("parse", "--codex-events", str(path))
    assert text.exit_code == 0
    out = text.stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "line 99" not in out.replace("\\n  line 99", "")  # only inside an escaped id
    rows = out.splitlines()
    assert len(rows) == 1 + 2 + 1 + 1 + 1  # header, 2 turns, blank, summary, 1 problem
    assert rows[-1].startswith("  line 3: ")


def test_parse_one_turn_matches_plain_parse_of_its_text(tmp_path: Path) -> None:
    text, _ = codex_turn_for_delivery(APPSERVER_STREAM, "turn_a1")
    plain = tmp_path / "turn.md"
    plain.write_text(text, encoding="utf-8")
    expected = invoke("parse", str(plain), "--json")
    got = invoke("parse", "--codex-events", str(APPSERVER_STREAM), "--turn", "turn_a1", "--json")
    assert got.exit_code == 0 and expected.exit_code == 0
    assert json.loads(got.stdout) == json.loads(expected.stdout)
    assert [c["kind"] for c in json.loads(got.stdout)["commands"]] == ["task-create", "todo-create"]
    # any status can be inspected
    failed = invoke("parse", "--codex-events", str(APPSERVER_STREAM), "--turn", "turn_a3", "--json")
    assert [c["kind"] for c in json.loads(failed.stdout)["commands"]] == ["task-create"]


def test_parse_usage_errors(tmp_path: Path) -> None:
    for args in (
        ("--codex-events", str(tmp_path / "missing.jsonl")),
        ("--codex-events", str(APPSERVER_STREAM), "--turn", "nope"),
        ("--codex-rollout", str(ROLLOUT), "--turn", "nope"),
    ):
        result = invoke("parse", *args, "--json")
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output


# ---- deliver --codex-events -------------------------------------------------------------


def _world_file(tmp_path: Path) -> Path:
    world = {
        "now": 1798333200,
        "projects": [{"id": "p1", "name": "shop"}],
        "permissions": [{"user": "u1", "project": "p1", "grants": ["read", "create_task"]}],
        "tasks": [
            {"id": "t0", "project_id": "p1", "status": "running", "created_by": "u1"},
            {
                "id": "t1",
                "project_id": "p1",
                "status": "completed",
                "created_by": "u1",
                "result_text": "done",
            },
        ],
    }
    path = tmp_path / "world.json"
    path.write_text(json.dumps(world))
    return path


@pytest.mark.rule("TRN-3")
def test_deliver_codex_events_default_and_named_turns(tmp_path: Path) -> None:
    world = _world_file(tmp_path)
    common = ("--world", str(world), "--sender", "t0", "--json")
    last = invoke("deliver", "--codex-events", str(APPSERVER_STREAM), *common)
    assert last.exit_code == 0, last.output
    report = json.loads(last.stdout)
    assert report["delivered"] is True
    assert [e["kind"] for e in report["entries"]] == ["task-poll"]  # turn_b1

    first = json.loads(
        invoke(
            "deliver", "--codex-events", str(APPSERVER_STREAM), "--turn", "turn_a1", *common
        ).stdout
    )
    assert [e["kind"] for e in first["entries"]] == ["task-create", "todo-create"]
    assert any(t["parent_task_id"] == "t0" for t in first["world"]["tasks"])

    for turn in ("turn_a2", "turn_a3", "turn_b2"):  # interrupted, failed, unfinished
        result = invoke("deliver", "--codex-events", str(APPSERVER_STREAM), "--turn", turn, *common)
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        assert (body["delivered"], body["entries"]) == (False, [])
        assert [t["id"] for t in body["world"]["tasks"]] == ["t0", "t1"]


def test_run_codex_parse_listing_directly(capsys: pytest.CaptureFixture[str]) -> None:
    from markertools_adapters.cli.cmd_codex import run_codex_parse

    run_codex_parse(APPSERVER_STREAM, None, None, True)
    listing = json.loads(capsys.readouterr().out)
    assert [t["blocks"] for t in listing["turns"]] == [2, 1, 1, 1, 0]
    run_codex_parse(None, ROLLOUT, None, False)
    out = capsys.readouterr().out
    (row,) = [r.split() for r in out.splitlines() if "line-21" in r]
    assert row[2:5] == ["failed", "1", "error:"]
    assert "You've hit your usage limit." in out
    assert _exit_code(run_codex_parse, APPSERVER_STREAM, ROLLOUT, None, True) == 2
    assert _exit_code(run_codex_parse, None, None, None, True) == 2
