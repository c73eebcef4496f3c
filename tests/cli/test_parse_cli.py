"""`markertools parse`, `guide` and `schema` (docs/cli.md): output contracts and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from support.paths import REPO
from typer.testing import CliRunner

from markertools.parse.kinds import KINDS
from markertools.parse.params import TaskCreateParams
from markertools_adapters.cli import app

BASIC = REPO / "examples" / "transcripts" / "basic.md"
runner = CliRunner()


def run(*args: str, stdin: str | bytes | None = None) -> Any:
    return runner.invoke(app, list(args), input=stdin)


@pytest.mark.rule("TRN-1", "TRN-2")
def test_parse_json_contract_on_the_example_transcript() -> None:
    result = run("parse", str(BASIC), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"commands", "issues"}
    kinds = [c["kind"] for c in doc["commands"]]
    assert kinds == [
        "task-create",
        "task-create",
        "todo-create",
        "automation-create",
        "task-cancel",
        "task-poll",
    ]
    for c in doc["commands"]:
        assert {"kind", "line", "params"} <= set(c) and isinstance(c["line"], int)
    cancel = doc["commands"][4]
    assert cancel["params"] == {"task_id": "t-api"} and cancel["written_kind"] == "task_cancel"
    assert doc["commands"][0]["params"] == {
        "prompt": doc["commands"][0]["params"]["prompt"], "name": "gift-cards", "model": None,
        "effort": "medium", "executor": None,
    }  # fmt: skip
    assert set(doc["commands"][0]["params"]) == {a.name for a in attrs.fields(TaskCreateParams)}
    poll = doc["commands"][5]["params"]
    assert (poll["interval_seconds"], poll["timeout_seconds"]) == (60, 900)
    issues = [(i["kind"], i["outcome"]) for i in doc["issues"]]
    assert issues == [
        ("Task-List", "unknown"),
        ("wait-threads", "skipped"),
        ("todo-update", "skipped"),
        ("task-retry", "skipped"),
    ]
    assert "did you mean 'task-list'?" in doc["issues"][0]["reason"]
    assert [i["line"] for i in doc["issues"]] == sorted(i["line"] for i in doc["issues"])


def test_parse_table_lists_blocks_by_line_with_run_order() -> None:
    result = run("parse", str(BASIC))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["LINE", "KIND", "OUTCOME", "DETAIL"]
    assert any(
        "task-cancel" in line and "run #5" in line and "task_id='t-api'" in line for line in lines
    )
    # issue 24: the note says the 900 s wait is kept and only the interval was clamped
    assert any(
        line.strip() == "note: wait_seconds 900: the poll waits up to 900 s and checks every "
        "60 s (interval_seconds must be 1–60, so 60 was used for it instead of 900)"
        for line in lines
    )
    assert any("unknown" in line and "did you mean 'task-list'?" in line for line in lines)
    assert lines[-1] == "6 to run, 3 skipped, 0 ignored, 1 unknown kind(s)"


def test_parse_reads_stdin_and_zh_reasons() -> None:
    result = run(
        "parse", "-", "--json", "--locale", "zh", stdin='```task-list\n{"limit": 0}\n```\n'
    )
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["commands"][0]["params"] == {"status": None, "q": None, "limit": 1}
    assert "实际使用 1" in doc["commands"][0]["notes"][0]


def test_parse_strips_a_utf8_bom_and_handles_crlf(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_bytes(b"\xef\xbb\xbf```task-list\r\n{}\r\n```\r\n")
    doc = json.loads(run("parse", str(path), "--json").stdout)
    assert [(c["kind"], c["line"]) for c in doc["commands"]] == [("task-list", 1)]


def test_no_blocks_prints_a_short_line(tmp_path: Path) -> None:
    path = tmp_path / "t.md"
    path.write_text("just prose\n", encoding="utf-8")
    assert run("parse", str(path)).stdout == "no marker blocks\n"
    assert json.loads(run("parse", str(path), "--json").stdout) == {"commands": [], "issues": []}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["parse", "/nonexistent/file.md"], "cannot read"),
        (["parse", "."], "cannot read"),
        (["parse"], "missing FILE"),
        (["parse", "x.md", "--codex-events", "e.jsonl"], "not both"),
        (["parse", "x.md", "--turn", "t1"], "--turn needs"),
        (["parse", "x.md", "--locale", "fr"], "--locale"),
        (["guide", "task-creat"], "did you mean 'task-create'"),
        (["guide", "--locale", "de"], "--locale"),
        (["schema", "nope"], "unknown marker kind"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], needle: str) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_invalid_utf8_is_unreadable_input(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    path.write_bytes(b"```task-list\n{}\n```\n\xff\xfe")
    entry = (
        "import sys; sys.argv[0] = 'markertools'; from markertools_adapters.cli import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", entry, "parse", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.startswith("markertools: ") and "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


def test_codex_options_are_handed_to_the_codex_reader(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[dict[str, Any]] = []

    def fake(**kwargs: Any) -> None:
        calls.append(kwargs)

    import markertools_adapters.cli.cmd_codex as cmd_codex

    monkeypatch.setattr(cmd_codex, "run_codex_parse", fake)
    events = tmp_path / "e.jsonl"
    result = run("parse", "--codex-events", str(events), "--turn", "t7", "--json")
    assert result.exit_code == 0, result.output
    assert calls == [{"events": events, "rollout": None, "turn": "t7", "as_json": True}]
    run("parse", "--codex-rollout", str(events))
    assert calls[1] == {"events": None, "rollout": events, "turn": None, "as_json": False}


def test_guide_command_prints_every_kind_in_both_locales() -> None:
    en = run("guide")
    zh = run("guide", "--locale", "zh", "wait_threads")
    assert en.exit_code == zh.exit_code == 0
    assert all(f"## {k.name} " in en.stdout for k in KINDS)
    assert (
        "## wait-threads " in zh.stdout
        and "## task-create " not in zh.stdout
        and "每轮最多 2 个" in zh.stdout
    )


def test_schema_command_prints_valid_schemas() -> None:
    every = json.loads(run("schema").stdout)
    assert list(every) == [k.name for k in KINDS]
    one = json.loads(run("schema", "task_retry").stdout)
    assert one == every["task-retry"]
    jsonschema.Draft202012Validator.check_schema(one)
