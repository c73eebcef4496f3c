"""A symbolic link planted where a task's directory belongs is never followed (issue 37):
neither at `<worktrees>/<host>` nor at `<worktrees>/<host>/<task id>`. The outside target
keeps its mode and gets no files; the host fails the task naming the link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from markertools_adapters.worker.dirs import prepare_task_dir


@pytest.mark.rule("WRK-2")
def test_a_link_at_the_task_directory_is_refused_and_the_target_untouched(tmp_path: Path) -> None:
    root, outside = tmp_path / "worktrees", tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (root / "h1").mkdir(parents=True)
    (root / "h1" / "t-1").symlink_to(outside)
    with pytest.raises(ValueError) as refused:
        prepare_task_dir(root, "h1", "t-1", None)
    assert str(refused.value) == (
        f"the task directory {root / 'h1' / 't-1'} is a symbolic link (to {outside}): refused"
        " - a task's directory is never reached through a link; remove it"
    )
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755  # never chmod'ed


@pytest.mark.rule("WRK-2")
def test_a_link_at_the_host_directory_is_refused_and_nothing_is_created_outside(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "worktrees", tmp_path / "outside"
    outside.mkdir()
    root.mkdir()
    (root / "h1").symlink_to(outside)
    with pytest.raises(ValueError, match=r"the host directory .* is a symbolic link"):
        prepare_task_dir(root, "h1", "t-1", None)
    assert os.listdir(outside) == []


@pytest.mark.rule("WRK-2")
def test_a_plain_directory_is_made_0700(tmp_path: Path) -> None:
    path = prepare_task_dir(tmp_path / "worktrees", "h1", "t-1", None)
    assert path == (tmp_path / "worktrees" / "h1" / "t-1").absolute()
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert prepare_task_dir(tmp_path / "worktrees", "h1", "t-1", None) == path  # found again


@pytest.mark.rule("WRK-4")
def test_a_huge_final_message_is_kept_whole_in_the_task_directory_and_its_end_in_the_store(
    offline_codex, tmp_path: Path
) -> None:
    """issue 37: a 50 MB answer was stored whole. The store keeps the last 200,000
    characters after a line saying where the whole text is."""
    from support.worker import add_task, routed, run_host, settings_for, worker_store

    from markertools_adapters.codex.fakemodel import Text
    from markertools_adapters.worker import WorkerHost
    from markertools_adapters.worker.run import RESULT_FILE, RESULT_TEXT_CHARS

    answer = "start " + "x" * 300_000 + " end"
    router = routed(offline_codex)
    router.on("big", lambda last, texts: Text(answer))
    with worker_store("sqlite", tmp_path) as store:
        add_task(store, "t-big", "[agent:big] say a lot")
        assert run_host(WorkerHost(settings_for(offline_codex, tmp_path), store)) == 0
        task = store.get_task("t-big")
    whole = tmp_path / "worktrees" / "h1" / "t-big" / RESULT_FILE
    assert whole.read_text(encoding="utf-8") == answer
    assert stat.S_IMODE(whole.stat().st_mode) == 0o600
    note, kept = task.result_text.split("\n", 1)
    assert note == (
        f"[markertools: the final message has {len(answer):,} characters; the store keeps"
        f" its last {RESULT_TEXT_CHARS:,} - the whole text is in {whole}]"
    )
    assert kept == answer[-RESULT_TEXT_CHARS:]
