"""WorktreeFiles with real files: locating a task's worktree (FIL-5), listing (FIL-3)
and reading text (FIL-4)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies.files import (
    SECRET,
    answer_text,
    files,
    make_root,
    make_worktree,
    refused_key,
    task,
)

from markertools.domain.ports import FileListing, FileRefused, FileText
from markertools.text.msg import Msg
from markertools_adapters._fsread import READ_CHUNK, SCAN_BYTES, read_text
from markertools_adapters.worktrees import WorktreeFiles

# ---- locating the worktree (FIL-5) ---------------------------------------------------


@pytest.mark.rule("FIL-5")
def test_unset_worktree_prefers_host_worktrees_then_tenants(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    (make_worktree(root, "t1", "tenants") / "from-tenant.txt").write_text("tenant")
    assert files(root).read(task("t1"), None, 100) == FileListing(("from-tenant.txt",), 0)
    (make_worktree(root, "t1") / "from-host.txt").write_text("host")
    assert files(root).read(task("t1"), None, 100) == FileListing(("from-host.txt",), 0)


@pytest.mark.rule("FIL-2", "FIL-5")
def test_missing_worktree_is_reported_never_invented(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    answer = files(root).read(task("t9"), None, 100)
    assert refused_key(answer) == "files.no_local_worktree"
    assert "host-worktrees/t9" in answer_text(answer)
    assert not (root / "host-worktrees" / "t9").exists()  # nothing was created
    recorded = files(root).read(task("t9", worktree="tenants/t9/wt"), None, 100)
    assert refused_key(recorded) == "files.no_local_worktree"


@pytest.mark.rule("FIL-5")
def test_recorded_worktree_inside_own_directory(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1", "tenants") / "repo" / "checkout"
    wt.mkdir(parents=True)
    (wt / "a.txt").write_text("deep")
    (root / "tenants" / "t1" / "not-in-worktree.txt").write_text("x")
    for recorded in ("tenants/t1/repo/checkout", str(wt), str(wt) + "/"):
        answer = files(root).read(task("t1", worktree=recorded), "a.txt", 100)
        assert answer == FileText("a.txt", "deep", False, 4, 4), recorded


@pytest.mark.rule("FIL-5")
def test_recorded_worktree_via_resolved_root(tmp_path: Path) -> None:
    """A root configured through a symlink still accepts worktrees recorded under the
    real path (and the other way round)."""
    root, _ = make_root(tmp_path)
    (make_worktree(root, "t1") / "a.txt").write_text("ok")
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    via_alias = WorktreeFiles(alias, "h1")
    real = str(root / "host-worktrees" / "t1")
    assert isinstance(via_alias.read(task("t1", worktree=real), "a.txt", 10), FileText)
    aliased = str(alias / "host-worktrees" / "t1")
    assert isinstance(files(root).read(task("t1", worktree=aliased), "a.txt", 10), FileRefused)


@pytest.mark.rule("FIL-5")
@pytest.mark.parametrize(
    ("recorded", "key"),
    [
        ("ROOT", "files.worktree_not_own"),  # the shared root itself
        ("ROOT/", "files.worktree_not_own"),
        (".", "files.worktree_not_own"),
        ("tenants", "files.worktree_not_own"),
        ("host-worktrees", "files.worktree_not_own"),
        ("tenants/t2", "files.worktree_not_own"),  # another task's directory
        ("host-worktrees/t2/sub", "files.worktree_not_own"),
        ("elsewhere/t1", "files.worktree_not_own"),
        ("tenants/t1/../t2", "files.worktree_invalid"),
        ("tenants/t1/\x00", "files.worktree_invalid"),
        ("/etc", "files.worktree_outside_root"),
        ("OUTSIDE", "files.worktree_outside_root"),
        ("ROOT_evil/tenants/t1", "files.worktree_outside_root"),
    ],
)
def test_recorded_worktree_never_escapes_own_directory(
    tmp_path: Path, recorded: str, key: str
) -> None:
    root, outside = make_root(tmp_path)
    make_worktree(root, "t1", "tenants")
    make_worktree(root, "t2", "tenants")
    make_worktree(root, "t2")
    (root / "host-worktrees" / "t2" / "sub").mkdir()
    (root / "elsewhere" / "t1").mkdir(parents=True)
    evil = tmp_path / "root_evil" / "tenants" / "t1"
    evil.mkdir(parents=True)
    (evil / "x.txt").write_text(SECRET)
    value = recorded.replace("ROOT", str(root)).replace("OUTSIDE", str(outside))
    answer = files(root).read(task("t1", worktree=value), None, 100)
    assert refused_key(answer) == key
    assert SECRET not in answer_text(answer)


@pytest.mark.rule("FIL-5")
@pytest.mark.parametrize("task_id", ["..", ".", "a/b", "..\\x", "t\x00", ""])
def test_unusable_task_ids_resolve_to_nothing(tmp_path: Path, task_id: str) -> None:
    root, _ = make_root(tmp_path)
    answer = files(root).read(task(task_id), None, 100)
    assert refused_key(answer) == "files.task_id_unusable"
    assert "secret-at-root.txt" not in answer_text(answer)


@pytest.mark.rule("FIL-5")
def test_worktree_directory_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    root, outside = make_root(tmp_path)
    (root / "host-worktrees" / "t1").symlink_to(outside)
    answer = files(root).read(task("t1"), "secret.txt", 100)
    assert refused_key(answer) == "files.worktree_not_dir"
    assert SECRET not in answer_text(answer)
    # a symlinked layout directory is refused as well
    (root / "tenants").rmdir()
    (root / "tenants").symlink_to(tmp_path / "outside")
    answer = files(root).read(task("sub", worktree="tenants/sub"), "file.txt", 100)
    assert refused_key(answer) == "files.worktree_not_dir"
    assert SECRET not in answer_text(answer)


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an existing directory"):
        WorktreeFiles(tmp_path / "missing", "h1")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError):
        WorktreeFiles(tmp_path / "file", "h1")
    assert WorktreeFiles(tmp_path, "box").local_host == "box"
    assert WorktreeFiles(tmp_path, None).local_host is None


# ---- listing (FIL-3) -----------------------------------------------------------------


@pytest.mark.rule("FIL-3")
def test_listing_first_50_sorted_dirs_marked_rest_counted(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    names = [f"f{i:03d}.txt" for i in range(100)] + [f"d{i:02d}" for i in range(30)]
    for name in names:
        if name.startswith("d"):
            (wt / name).mkdir()
        else:
            (wt / name).write_text("x")
    answer = files(root).read(task("t1"), "", 100)
    assert isinstance(answer, FileListing)
    expected = [n + "/" if n.startswith("d") else n for n in sorted(names)][:50]
    assert list(answer.entries) == expected
    assert answer.omitted == len(names) - 50
    assert files(root).read(task("t1"), None, 100) == answer
    assert files(root).read(task("t1"), ".", 100) == answer


@pytest.mark.rule("FIL-3")
def test_listing_does_not_follow_symlinks_when_classifying(tmp_path: Path) -> None:
    root, outside = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "real").mkdir()
    (wt / "link-to-dir").symlink_to("real")
    (wt / "link-outside").symlink_to(outside)
    (wt / "dangling").symlink_to("nowhere")
    answer = files(root).read(task("t1"), None, 100)
    assert answer == FileListing(("dangling", "link-outside", "link-to-dir", "real/"), 0)


@pytest.mark.rule("FIL-3")
def test_listing_subdirectory_and_empty_directory(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "src" / "pkg").mkdir(parents=True)
    (wt / "src" / "main.py").write_text("print(1)\n")
    (wt / "empty").mkdir()
    assert files(root).read(task("t1"), "src", 100) == FileListing(("main.py", "pkg/"), 0)
    assert files(root).read(task("t1"), "src/", 100) == FileListing(("main.py", "pkg/"), 0)
    assert files(root).read(task("t1"), "empty", 100) == FileListing((), 0)


@pytest.mark.rule("FIL-3")
def test_listing_renders_undecodable_and_control_names_safely(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    raw_names = [b"caf\xe9.txt", b"\xff\xfe", b"new\nline", "ok-文件".encode()]
    for raw in raw_names:
        with open(os.path.join(os.fsencode(wt), raw), "wb") as fh:
            fh.write(b"x")
    answer = files(root).read(task("t1"), None, 100)
    assert isinstance(answer, FileListing)
    assert set(answer.entries) == {"caf\\xe9.txt", "\\xff\\xfe", "new\\nline", "ok-文件"}
    for entry in answer.entries:
        entry.encode("utf-8")  # no surrogates
        assert "\n" not in entry
    # sorted by the raw bytes of the names
    order = sorted(raw_names)
    assert answer.entries[0] == "caf\\xe9.txt" and order[0] == b"caf\xe9.txt"


# ---- reading (FIL-4) -----------------------------------------------------------------


@pytest.mark.rule("FIL-4")
def test_read_small_file_whole(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "dir").mkdir()
    (wt / "dir" / "ü.md").write_text("héllo 文字\r\nline2\n", encoding="utf-8")
    answer = files(root).read(task("t1"), "dir/ü.md", 20000)
    text = "héllo 文字\r\nline2\n"
    assert answer == FileText("dir/ü.md", text, False, len(text), len(text.encode()))
    (wt / "empty.txt").write_text("")
    assert files(root).read(task("t1"), "empty.txt", 20000) == FileText(
        "empty.txt", "", False, 0, 0
    )


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize("length", [19999, 20000, 20001, 45000])
def test_truncation_counts_code_points(tmp_path: Path, length: int) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    text = ("ab文😀" * (length // 4 + 1))[:length]
    (wt / "big.txt").write_text(text, encoding="utf-8")
    answer = files(root).read(task("t1"), "big.txt", 20000)
    assert isinstance(answer, FileText)
    assert answer.text == text[:20000]
    assert answer.truncated == (length > 20000)
    assert answer.size_bytes == len(text.encode())
    assert answer.total_chars == length  # files up to SCAN_BYTES are counted whole


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize("width", [2, 3, 4])
def test_multibyte_character_cut_by_a_chunk_boundary(tmp_path: Path, width: int) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    char = {2: "é", 3: "文", 4: "😀"}[width]
    text = "a" * (READ_CHUNK - 1) + char + "tail"  # the char straddles the first chunk
    (wt / "cut.txt").write_text(text, encoding="utf-8")
    answer = files(root).read(task("t1"), "cut.txt", len(text) + 10)
    assert answer == FileText("cut.txt", text, False, len(text), len(text.encode()))


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"hello\x00world", "files.why_nul"),
        (b"x" * 9000 + b"\x00", "files.why_nul"),  # beyond 8000 bytes but within the read
        (b"caf\xe9 latin-1", "files.why_utf8"),
        (b"\x89PNG\r\n\x1a\n", "files.why_utf8"),
        (b"ends inside \xe6\x96", "files.why_utf8_end"),
        (b"a" * (READ_CHUNK - 1) + b"\xe6\x96", "files.why_utf8_end"),
        (b"a" * (READ_CHUNK - 1) + b"\xe6\xff\xff", "files.why_utf8"),
        (b"\xed\xa0\x80 surrogate", "files.why_utf8"),
    ],
)
def test_binary_and_non_utf8_files_are_refused(tmp_path: Path, content: bytes, why: str) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "f.bin").write_bytes(content)
    # read far enough that every byte is decoded (the reader stops once it has enough)
    answer = files(root).read(task("t1"), "f.bin", 2 * READ_CHUNK)
    assert refused_key(answer) == "files.not_text"
    assert isinstance(answer, FileRefused)
    assert answer.reason.arg("why").key == why  # type: ignore[union-attr]


@pytest.mark.rule("FIL-4")
def test_invalid_utf8_offset_is_reported(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "f").write_bytes(b"a" * (READ_CHUNK - 1) + b"\xe6\xff")
    answer = files(root).read(task("t1"), "f", 2 * READ_CHUNK)
    assert isinstance(answer, FileRefused)
    assert f"byte offset {READ_CHUNK - 1}" in answer.reason.render("en")


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/etc/passwd", "files.path_absolute"),
        ("../../secret-at-root.txt", "files.path_dotdot"),
        ("a\x00b", "files.path_nul"),
        ("C:/x", "files.path_drive"),
        ("//srv/x", "files.path_unc"),
        ("missing.txt", "files.not_found"),
        ("file.txt/x", "files.not_a_directory"),
    ],
)
def test_bad_paths_are_refused_with_their_reason(tmp_path: Path, path: str, key: str) -> None:
    root, _ = make_root(tmp_path)
    (make_worktree(root, "t1") / "file.txt").write_text("x")
    answer = files(root).read(task("t1"), path, 100)
    assert refused_key(answer) == key
    assert SECRET not in answer_text(answer)


@pytest.mark.rule("FIL-4")
def test_in_worktree_symlinks_are_followed_within_the_worktree(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "docs").mkdir()
    (wt / "docs" / "AGENTS.md").write_text("agents")
    (wt / "CLAUDE.md").symlink_to("docs/AGENTS.md")
    (wt / "docs" / "up").symlink_to("../CLAUDE.md")
    (wt / "abs").symlink_to(wt / "docs" / "AGENTS.md")
    (wt / "docs-link").symlink_to("docs")
    for path in ("CLAUDE.md", "docs/up", "abs", "docs-link/AGENTS.md", "docs-link/../CLAUDE.md"):
        if ".." in path:
            assert refused_key(files(root).read(task("t1"), path, 100)) == "files.path_dotdot"
            continue
        answer = files(root).read(task("t1"), path, 100)
        assert isinstance(answer, FileText), (path, answer)
        assert answer.text == "agents"
    assert files(root).read(task("t1"), "docs-link", 100) == FileListing(("AGENTS.md", "up"), 0)


@pytest.mark.rule("FIL-4")
def test_files_up_to_scan_limit_are_checked_whole(tmp_path: Path) -> None:
    """Past the shown text the reader keeps validating up to SCAN_BYTES: a bad byte
    there still refuses the file; beyond SCAN_BYTES a file is judged on what was read."""
    root, _ = make_root(tmp_path)
    wt = make_worktree(root, "t1")
    (wt / "late-nul").write_bytes(b"a" * (SCAN_BYTES - 10) + b"\x00")
    (wt / "late-bad").write_bytes(b"a" * (SCAN_BYTES - 10) + b"\xff")
    (wt / "beyond").write_bytes(b"a" * (SCAN_BYTES + READ_CHUNK) + b"\xff\x00")
    assert refused_key(files(root).read(task("t1"), "late-nul", 20000)) == "files.not_text"
    assert refused_key(files(root).read(task("t1"), "late-bad", 20000)) == "files.not_text"
    answer = files(root).read(task("t1"), "beyond", 20000)
    assert isinstance(answer, FileText)
    assert answer.truncated and answer.total_chars is None and answer.text == "a" * 20000


@pytest.mark.rule("FIL-4")
@given(
    data=st.one_of(
        st.binary(max_size=64),
        st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.lists(st.sampled_from(["a", "é", "文", "😀", "\x00", "\n"]), max_size=40).map(
            lambda cs: "".join(cs).encode()
        ),
    ),
    max_chars=st.integers(0, 30),
    chunk=st.integers(1, 7),
)
def test_read_text_agrees_with_whole_decoding(data: bytes, max_chars: int, chunk: int) -> None:
    """Chunked incremental reading (any chunk size, characters split anywhere) gives the
    same verdict and text as decoding the whole file at once, when the scan covers it."""
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        fh.seek(0)
        got = read_text(fh.fileno(), max_chars, scan_bytes=len(data) + 1, chunk=chunk)
    try:
        decoded: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        decoded = None
    utf8_keys = {"files.why_utf8", "files.why_utf8_end"}
    if decoded is None:
        assert isinstance(got, Msg)
        allowed = utf8_keys | ({"files.why_nul"} if b"\x00" in data else set())
        assert got.key in allowed
    elif b"\x00" in data:
        assert isinstance(got, Msg) and got.key == "files.why_nul"
        assert got.arg("offset") is not None
    else:
        assert got == (decoded[:max_chars], len(decoded) > max_chars, len(decoded))
