"""Boundaries of the task-files limits (issue 20): the directory listing's 50 entries
(FIL-3) at 49, 50 and 51 entries, and the 20000 code points a read returns (FIL-4) at
19999, 20000 and 20001 code points, in one-, two-, three- and four-byte characters so
that code points, not bytes, are counted. Both through delivery on the real
WorktreeFiles adapter over real directories and through the handler's own cut of an
adapter that returns too much; the whole text an agent reads is asserted."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.framing import first_nonce, framed_en
from support.strategies.files import deliver, files_ports, make_root, make_worktree

from markertools import Command, Task
from markertools.deliver.handlers import files as files_handler
from markertools.domain.ports import FileAnswer, FileListing, FileText, TaskFiles
from markertools.parse.params import TaskFilesParams
from markertools_adapters import worktrees
from markertools_adapters.worktrees import WorktreeFiles

SENDER = Task("t1", "p1", created_by="u1")
CHILD = Task("t2", "p1", created_by="u1", parent_task_id="t1")
LIST_LIMIT = files_handler.LIST_LIMIT
MAX_FILE_CHARS = files_handler.MAX_FILE_CHARS


def _files_cmd(path: str | None = None) -> Command:
    return Command("task-files", 3, TaskFilesParams("t2", path))


def _listing_text(entries: list[str], omitted: int, nonce: str, where: str | None) -> str:
    place = where if where else "the top level"
    more = f"; {omitted} more entries not shown" if omitted else ""
    label = f"directory listing of {place} in the worktree of task t2"
    return (
        f"{place} of task t2's worktree: {len(entries)} entries shown "
        f"(sorted by name, directories end with /){more}\n"
        + framed_en(label, "\n".join(entries), nonce)
    )


def _file_text(path: str, kept: str, total: int, nonce: str) -> str:
    if total <= MAX_FILE_CHARS:
        size = f"{total} characters, shown in full"
    else:
        size = f"truncated: only the first {len(kept)} of {total} characters are shown"
    label = f"contents of file {path} in the worktree of task t2"
    return f"file {path} of task t2: {size}\n" + framed_en(label, kept, nonce)


def _worktree(tmp_path: Path) -> tuple[Path, WorktreeFiles]:
    root, _ = make_root(tmp_path)
    return make_worktree(root, "t2"), WorktreeFiles(root, "h1")


def _deliver_one(port: TaskFiles, path: str | None) -> tuple[str, str]:
    _, ports = files_ports((SENDER, CHILD), files_port=port)
    report = deliver(ports, _files_cmd(path))
    (entry,) = report.entries
    assert (entry.outcome, entry.kind, entry.target) == ("done", "task-files", "t2")
    return entry.reason.render("en"), entry.reason.render("zh")


# ---- FIL-3: the listing ----------------------------------------------------------------


@pytest.mark.rule("FIL-3")
@pytest.mark.parametrize("count", [LIST_LIMIT - 1, LIST_LIMIT, LIST_LIMIT + 1])
@pytest.mark.parametrize("where", [None, "sub"])
def test_listing_shows_the_first_50_by_name_and_counts_the_rest(
    tmp_path: Path, count: int, where: str | None
) -> None:
    assert LIST_LIMIT == worktrees.LIST_LIMIT == 50  # the rule's number, handler and adapter
    wt, port = _worktree(tmp_path)
    base = wt / where if where else wt
    base.mkdir(exist_ok=True)
    # every third entry a directory; created in a shuffled order, so the order shown is
    # the sort's; the names differ in case too ("E" sorts before "e" in code point order)
    names = [f"{'E' if i % 2 else 'e'}{i:03d}" for i in range(count)]
    order = names[:]
    random.Random(count).shuffle(order)
    for name in order:
        if int(name[1:]) % 3 == 0:
            (base / name).mkdir()
        else:
            (base / name).write_text("x")
    expected = [n + ("/" if int(n[1:]) % 3 == 0 else "") for n in sorted(names)][:LIST_LIMIT]
    omitted = max(0, count - LIST_LIMIT)
    en, zh = _deliver_one(port, where)
    assert en == _listing_text(expected, omitted, first_nonce(en), where)
    if omitted:
        assert f"；另有 {omitted} 项未显示" in zh
    else:
        assert "未显示" not in zh


class _Listing:
    """A TaskFiles port that answers every read with a fixed answer."""

    def __init__(self, answer: FileAnswer) -> None:
        self.answer = answer
        self.asked: list[tuple[str | None, int]] = []

    @property
    def local_host(self) -> str | None:
        return "h1"

    def read(self, task: Task, path: str | None, max_chars: int) -> FileAnswer:
        self.asked.append((path, max_chars))
        return self.answer


@pytest.mark.rule("FIL-3")
@pytest.mark.parametrize("count", [LIST_LIMIT - 1, LIST_LIMIT, LIST_LIMIT + 1])
@pytest.mark.parametrize("omitted", [0, 7])
def test_the_handler_cuts_an_adapter_listing_that_is_too_long(count: int, omitted: int) -> None:
    assert LIST_LIMIT == 50
    entries = [f"n{i:02d}" for i in range(count)]
    port = _Listing(FileListing(tuple(entries), omitted))
    en, _ = _deliver_one(port, None)
    left_out = omitted + max(0, count - LIST_LIMIT)
    assert en == _listing_text(entries[:LIST_LIMIT], left_out, first_nonce(en), None)
    assert port.asked == [(None, MAX_FILE_CHARS)]


# ---- FIL-4: the read -------------------------------------------------------------------


# one-byte, two-byte, three-byte and four-byte UTF-8 characters; 20000 "😀" are 80000
# bytes, more than one read chunk, so a character is split between two chunks
CHARS = ["a", "é", "文", "😀"]


@pytest.mark.rule("FIL-4", "DOM-4")
@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("char", CHARS)
def test_read_returns_at_most_20000_code_points(tmp_path: Path, delta: int, char: str) -> None:
    assert MAX_FILE_CHARS == 20000
    total = MAX_FILE_CHARS + delta
    text = "z" + char * (total - 1)  # a different first code point: the head is kept
    wt, port = _worktree(tmp_path)
    (wt / "big.txt").write_text(text, encoding="utf-8")
    assert len(text.encode()) > MAX_FILE_CHARS or char == "a"
    en, zh = _deliver_one(port, "big.txt")
    kept = text[:MAX_FILE_CHARS]
    assert en == _file_text("big.txt", kept, total, first_nonce(en))
    if delta > 0:
        assert f"已截断：{total} 个字符中只显示前 {MAX_FILE_CHARS} 个" in zh
    else:
        assert f"共 {total} 个字符，已完整显示" in zh


@pytest.mark.rule("FIL-4", "DOM-4")
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_a_multibyte_character_at_the_cut_is_kept_whole(tmp_path: Path, delta: int) -> None:
    assert MAX_FILE_CHARS == 20000
    total = MAX_FILE_CHARS + delta
    head = "a" * (min(total, MAX_FILE_CHARS) - 1) + "界"  # the last code point kept
    text = head + "b" * max(0, total - MAX_FILE_CHARS)
    assert len(text) == total
    wt, port = _worktree(tmp_path)
    (wt / "edge.md").write_text(text, encoding="utf-8")
    en, _ = _deliver_one(port, "edge.md")
    assert en == _file_text("edge.md", head, total, first_nonce(en))


@pytest.mark.rule("FIL-4", "DOM-4")
@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("char", ["a", "é"])
def test_the_handler_cuts_an_adapter_text_that_is_too_long(delta: int, char: str) -> None:
    assert MAX_FILE_CHARS == 20000
    total = MAX_FILE_CHARS + delta
    port = _Listing(FileText("f.txt", char * total, truncated=False))
    en, _ = _deliver_one(port, "f.txt")
    assert en == _file_text("f.txt", char * min(total, MAX_FILE_CHARS), total, first_nonce(en))
    assert port.asked == [("f.txt", MAX_FILE_CHARS)]
