"""The fake model's reply script (`--replies FILE`, docs/fake-model.md): turn N gets reply N
of a text file (replies separated by `%%` lines) or a JSON-lines file, then an echo; a
file that cannot be used is one line on stderr and exit 2. The documented recipe -
examples/codex_worker.py under the real Codex and the fake, delivering a block - runs in
tests/test_docs_run.py; here the same worker is checked against the database it changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.codex import codex_bin
from support.paths import REPO

import markertools_adapters
from markertools import Task
from markertools_adapters.codex.fakemodel import read_replies
from markertools_adapters.world import loads_world

REPLIES = REPO / "examples" / "replies" / "split-load-test.txt"


def test_a_text_file_holds_one_reply_per_turn_between_separator_lines(tmp_path: Path) -> None:
    path = tmp_path / "replies.txt"
    path.write_text("\nfirst\n\n```todo-list\n{}\n```\n\n%%\nsecond, 100%%\n%%\n\n%%\n")
    assert read_replies(str(path)) == ["first\n\n```todo-list\n{}\n```", "second, 100%%"]
    assert len(read_replies(str(REPLIES))) == 2


def test_a_jsonl_file_holds_strings_or_text_objects(tmp_path: Path) -> None:
    path = tmp_path / "replies.jsonl"
    path.write_text('"one"\n\n{"text": "two\\n```todo-list\\n{}\\n```"}\n')
    assert read_replies(str(path)) == ["one", "two\n```todo-list\n{}\n```"]
    path.write_text('"one"\n{"text": 2}\n')
    with pytest.raises(ValueError, match=r"line 2: expected a string or \{\"text\": \.\.\.\}$"):
        read_replies(str(path))


def test_a_bad_replies_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    for path, reason in (
        (bad, f"--replies {bad} line 1: not JSON (Expecting value: line 1 column 1 (char 0))"),
        (tmp_path / "missing.txt", f"--replies {tmp_path / 'missing.txt'}: cannot read it"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "markertools_adapters.codex.fakemodel", "--replies",
             str(path), "--", sys.executable, "-c", "print('never')"],
            capture_output=True, text=True, timeout=60,
        )
        assert done.returncode == 2
        assert done.stdout == ""
        assert done.stderr.startswith(f"fakemodel: {reason}") and done.stderr.count("\n") == 1


@pytest.mark.rule("DOT-3", "TRN-6")
def test_codex_worker_under_the_fake_delivers_the_scripted_blocks(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    world = loads_world((REPO / "examples" / "worlds" / "shop.json").read_text())
    with markertools_adapters.connect(db, executor="noop") as store:
        store.load_world(world)
        split = Task("t-split", "p-shop", status="queued", created_by="alice",
                     prompt="Split off the load test", parent_task_id="t-lead")
        store.insert_task(split)
    done = subprocess.run(
        [sys.executable, "-m", "markertools_adapters.codex.fakemodel", "--replies",
         str(REPLIES), "--", sys.executable, str(REPO / "examples" / "codex_worker.py"),
         "--db", str(db), "--project", "p-shop", "--", codex_bin(), "app-server"],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "claimed t-split (fresh)"
    assert "completed, delivered=True, 2 block(s)" in lines[1]
    assert "completed, delivered=True, 0 block(s)" in lines[2]
    assert lines[3].startswith("stopped: no_blocks")
    assert lines[4] == "t-split: completed"
    with markertools_adapters.connect(db, executor="noop", must_exist=True) as store:
        after = store.export_world(0.0)
    (new,) = [t for t in after.tasks if t.id not in {t.id for t in world.tasks} | {"t-split"}]
    assert (new.parent_task_id, new.prompt) == (
        "t-split",
        "Run the checkout load test and report p95 latency.",
    )
    assert [d.task_id for d in after.todos if d.title == "Review the load test results"] == [new.id]
