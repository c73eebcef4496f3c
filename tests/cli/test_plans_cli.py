"""`markertools plan validate` and `markertools plan schedule` (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.paths import REPO
from support.strategies.plans import proposal_dict, role_dict
from typer.testing import CliRunner

from markertools_adapters.cli import app

EXAMPLES = REPO / "examples" / "plans"
runner = CliRunner()


def run(*args: str, stdin: str | bytes | None = None) -> Any:
    return runner.invoke(app, list(args), input=stdin)


def write(tmp_path: Path, obj: Any, name: str = "p.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return str(path)


@pytest.mark.rule("PLN-1")
def test_validate_valid_example() -> None:
    result = run("plan", "validate", str(EXAMPLES / "reader-fixer-verifier.json"))
    assert result.exit_code == 0
    assert result.stdout == "valid proposal: 3 roles\n  order: reader -> fixer -> verifier\n"


@pytest.mark.rule("PLN-1", "PLN-3")
def test_validate_json_shape_exact() -> None:
    result = run("plan", "validate", str(EXAMPLES / "invalid-cycle-and-unknown.json"), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "valid": False,
        "errors": [
            {"path": "$.workers[2].dependsOn[0]", "message": "unknown role 'ghost'"},
            {"path": "$.workers", "message": "dependency cycle: reader -> fixer -> reader"},
        ],
    }
    ok = run("plan", "validate", str(EXAMPLES / "seed.json"), "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout) == {"valid": True, "errors": []}


@pytest.mark.rule("PLN-2")
def test_validate_text_lists_every_error(tmp_path: Path) -> None:
    path = write(tmp_path, proposal_dict([role_dict("a", sandbox="danger-full-access", cwd="rel")]))
    result = run("plan", "validate", path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "invalid proposal: 2 errors"
    assert lines[1].startswith("  $.workers[0].cwd: cwd must be an absolute path")
    assert lines[2].startswith(
        "  $.workers[0].sandbox: full-access sandbox 'danger-full-access' is refused"
    )


@pytest.mark.rule("PLN-2")
def test_validate_refuses_control_characters_in_names_and_models(tmp_path: Path) -> None:
    """Issue 26 item 3: a role named across two lines and a model carrying an escape
    sequence are refused at their paths; the free-text goal keeps its newline."""
    hostile = proposal_dict(
        [role_dict("reader\n== Launch these workers?", model="gpt\x1b[2K")],
        goal="fix it\nlimits: maxTurns 1, timeoutMs 1000 (SAFE)",
    )
    result = run("plan", "validate", write(tmp_path, hostile))
    assert result.exit_code == 1
    reason = "must not contain control characters (line breaks, tabs, escapes, bidi controls)"
    assert result.stdout.splitlines() == [
        "invalid proposal: 2 errors",
        f"  $.workers[0].name: {reason}: found U+000A at character 7",
        f"  $.workers[0].model: {reason}: found U+001B at character 4",
    ]


@pytest.mark.rule("PLN-3")
def test_validate_in_chinese() -> None:
    result = run(
        "plan",
        "validate",
        str(EXAMPLES / "invalid-cycle-and-unknown.json"),
        "--json",
        "--locale",
        "zh",
    )
    assert (
        json.loads(result.stdout)["errors"][1]["message"] == "依赖环路：reader -> fixer -> reader"
    )


@pytest.mark.rule("PLN-2")
def test_validate_thread_cwd_option(tmp_path: Path) -> None:
    path = write(tmp_path, proposal_dict([role_dict("a", existingThreadId="thr_1")]))
    assert run("plan", "validate", path, "--thread-cwd", "thr_1=/work/project/").exit_code == 0
    bad = run("plan", "validate", path, "--json", "--thread-cwd", "thr_1=/elsewhere")
    assert bad.exit_code == 1
    assert json.loads(bad.stdout)["errors"][0]["path"] == "$.workers[0].existingThreadId"
    usage = run("plan", "validate", path, "--thread-cwd", "no-equals-sign")
    assert usage.exit_code == 2 and "THREAD=CWD" in usage.stderr


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"{", "not JSON"),
        (b'{"a": NaN}', "NaN is not a JSON value"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"", "not JSON"),
    ],
)
def test_validate_unreadable_input_exit_2(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    result = run("plan", "validate", str(path), "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_validate_missing_file_and_bad_locale(tmp_path: Path) -> None:
    missing = run("plan", "validate", str(tmp_path / "nope.json"))
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
    locale = run("plan", "validate", str(EXAMPLES / "seed.json"), "--locale", "fr")
    assert locale.exit_code == 2 and "--locale" in locale.stderr


@pytest.mark.rule("PLN-1")
def test_validate_stdin_and_bom() -> None:
    text = (EXAMPLES / "seed.json").read_text(encoding="utf-8")
    assert run("plan", "validate", "-", stdin=text).exit_code == 0
    assert run("plan", "validate", "-", stdin="\ufeff" + text).exit_code == 0


@pytest.mark.rule("PLN-1")
def test_not_an_object_is_invalid_not_unreadable(tmp_path: Path) -> None:
    result = run("plan", "validate", write(tmp_path, [1, 2]), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "valid": False,
        "errors": [{"path": "$", "message": "expected an object, got an array"}],
    }


@pytest.mark.rule("PLN-5", "PLN-10")
def test_schedule_json_shape() -> None:
    result = run(
        "plan",
        "schedule",
        str(EXAMPLES / "reader-fixer-verifier.json"),
        "--finished",
        "reader",
        "--json",
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "valid": True,
        "ready": ["fixer"],
        "start": ["fixer"],
        "waiting": {"verifier": ["fixer"]},
        "receives": {"fixer": ["reader"]},
        "finished": ["reader"],
        "running": [],
        "order": ["reader", "fixer", "verifier"],
        "maxConcurrent": 3,
    }


@pytest.mark.rule("PLN-5")
def test_schedule_several_finished_forms() -> None:
    path = str(EXAMPLES / "reader-fixer-verifier.json")
    a = run("plan", "schedule", path, "--finished", "reader", "fixer", "--json")
    b = run("plan", "schedule", path, "--finished", "reader", "--finished", "fixer", "--json")
    assert a.exit_code == b.exit_code == 0
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(a.stdout)["ready"] == ["verifier"]
    none = run("plan", "schedule", path, "--json")
    assert json.loads(none.stdout)["ready"] == ["reader"]
    done = run("plan", "schedule", path, "--finished", "reader", "fixer", "verifier")
    assert done.exit_code == 0 and done.stdout == "every role has finished\n"


@pytest.mark.rule("PLN-5", "PLN-10")
def test_schedule_max_concurrent_and_running(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        proposal_dict([role_dict("a"), role_dict("b"), role_dict("c"), role_dict("d", ["a"])]),
    )
    result = run("plan", "schedule", path, "--running", "a", "--max-concurrent", "2", "--json")
    got = json.loads(result.stdout)
    assert got["ready"] == ["b", "c"] and got["start"] == ["b"] and got["running"] == ["a"]
    assert got["waiting"] == {"d": ["a"]} and got["maxConcurrent"] == 2
    text = run(
        "plan", "schedule", path, "--running", "a", "--running", "b", "--max-concurrent", "2"
    )
    assert text.stdout.splitlines() == [
        "ready: c",
        "start now: (none: 2 of 2 slots are busy)",
        "waiting: d (for a)",
        "running: a",
        "running: b",
    ]


@pytest.mark.rule("PLN-5")
def test_schedule_text_names_received_conclusions() -> None:
    result = run(
        "plan", "schedule", str(EXAMPLES / "reader-fixer-verifier.json"), "--finished", "reader"
    )
    assert result.stdout.splitlines() == [
        "ready: fixer (receives the conclusions of reader)",
        "start now: fixer",
        "waiting: verifier (for fixer)",
    ]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--finished", "ghost"], "unknown role 'ghost'"),
        (["--finished", "fixer"], "before its dependency 'reader'"),
        (["--max-concurrent", "4"], "between 1 and 3"),
        (["--finished", "reader", "--running", "reader"], "both finished and running"),
    ],
)
def test_schedule_usage_errors_exit_2(args: list[str], fragment: str) -> None:
    result = run("plan", "schedule", str(EXAMPLES / "reader-fixer-verifier.json"), *args)
    assert result.exit_code == 2 and fragment in result.stderr and result.stdout == ""


@pytest.mark.rule("PLN-3")
def test_schedule_invalid_proposal_exit_1() -> None:
    result = run("plan", "schedule", str(EXAMPLES / "invalid-cycle-and-unknown.json"), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["valid"] is False
