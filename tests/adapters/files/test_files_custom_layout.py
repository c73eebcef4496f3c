"""task-files with an embedder's worktree layout (issue 19): the adversarial cases of
test_files_adversarial.py hold for a custom layout too, and a layout can never widen
what a task may read (FIL-5): its directory must hold the task id, stay below the root,
and a recorded worktree outside it is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.strategies.files import SECRET, answer_text, make_root, refused_key, task

from markertools.domain.ports import FileListing, FileRefused, FileText
from markertools_adapters.worktrees import WorktreeFiles, seed_layout, template_layout

LAYOUT = "{host}/checkouts/{task_id}"


def _custom(tmp_path: Path) -> tuple[Path, Path, Path]:
    root, outside = make_root(tmp_path)
    wt = root / "h1" / "checkouts" / "t1"
    wt.mkdir(parents=True)
    (wt / "README.md").write_text("hello from t1\n")
    return root, outside, wt


def test_the_seed_layout_is_the_default() -> None:
    assert seed_layout("h1", "t9") == ("host-worktrees/t9", "tenants/t9")


@pytest.mark.rule("FIL-5")
@pytest.mark.parametrize(
    "layout",
    [LAYOUT, [LAYOUT], template_layout(LAYOUT), lambda host, tid: f"{host}/checkouts/{tid}"],
)
def test_a_custom_layout_reads_the_task_s_own_directory(tmp_path: Path, layout: object) -> None:
    root, _, _ = _custom(tmp_path)
    reader = WorktreeFiles(root, "h1", layout=layout)  # type: ignore[arg-type]
    answer = reader.read(task("t1"), "README.md", 100)
    assert isinstance(answer, FileText) and answer.text == "hello from t1\n"
    assert reader.read(task("t1"), None, 100) == FileListing(("README.md",), 0)
    # the seed's directories are no longer looked at
    (root / "host-worktrees" / "t2").mkdir()
    assert refused_key(reader.read(task("t2"), None, 100)) == "files.no_local_worktree"


@pytest.mark.rule("FIL-4", "FIL-5")
@pytest.mark.parametrize("absolute", [False, True])
def test_symlinks_out_of_a_custom_worktree_are_refused(tmp_path: Path, absolute: bool) -> None:
    root, outside, wt = _custom(tmp_path)
    target = outside / "secret.txt"
    (wt / "leak.txt").symlink_to(target if absolute else os.path.relpath(target, wt))
    (wt / "sibling").symlink_to("../t2")
    (root / "h1" / "checkouts" / "t2").mkdir()
    (root / "h1" / "checkouts" / "t2" / "x.txt").write_text(SECRET)
    reader = WorktreeFiles(root, "h1", layout=LAYOUT)
    for path in ("leak.txt", "sibling/x.txt"):
        answer = reader.read(task("t1"), path, 20000)
        assert refused_key(answer) == "files.symlink_outside"
        assert SECRET not in answer_text(answer)


@pytest.mark.rule("FIL-5")
@pytest.mark.parametrize(
    "bad",
    [
        lambda host, tid: "../outside",  # climbs out of the root
        lambda host, tid: "/etc",  # absolute
        lambda host, tid: "shared",  # no task id: every task would share it
        lambda host, tid: f"{host}/../{tid}",
        lambda host, tid: "",
        lambda host, tid: 42,  # not a path at all
    ],
)
def test_a_layout_cannot_widen_what_a_task_reads(tmp_path: Path, bad: object) -> None:
    root, _ = make_root(tmp_path)
    (root / "shared").mkdir()
    (root / "shared" / "x.txt").write_text(SECRET)
    reader = WorktreeFiles(root, "h1", layout=bad)  # type: ignore[arg-type]
    answer = reader.read(task("t1"), "x.txt", 100)
    assert isinstance(answer, FileRefused)
    assert SECRET not in answer_text(answer)


@pytest.mark.rule("FIL-5")
def test_a_layout_that_raises_refuses_the_read(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)

    def broken(host: str | None, task_id: str) -> str:
        raise RuntimeError("layout service down")

    answer = WorktreeFiles(root, "h1", layout=broken).read(task("t1"), None, 100)
    assert isinstance(answer, FileRefused)
    assert "layout service down" in answer.reason.render("en")


@pytest.mark.rule("FIL-5")
def test_a_recorded_worktree_outside_the_custom_layout_is_refused(tmp_path: Path) -> None:
    root, _, wt = _custom(tmp_path)
    (wt / "sub").mkdir()
    (wt / "sub" / "f.txt").write_text("inside\n")
    (root / "host-worktrees" / "t1").mkdir()
    reader = WorktreeFiles(root, "h1", layout=LAYOUT)
    inside = reader.read(task("t1", worktree=str(wt / "sub")), "f.txt", 100)
    assert isinstance(inside, FileText) and inside.text == "inside\n"
    seed_dir = reader.read(task("t1", worktree="host-worktrees/t1"), None, 100)
    assert refused_key(seed_dir) == "files.worktree_not_own"


def test_a_host_template_without_a_local_host_finds_nothing(tmp_path: Path) -> None:
    root, _, _ = _custom(tmp_path)
    answer = WorktreeFiles(root, None, layout=LAYOUT).read(task("t1"), None, 100)
    assert isinstance(answer, FileRefused)


def test_templates_must_name_the_task_id(tmp_path: Path) -> None:
    root, _ = make_root(tmp_path)
    with pytest.raises(ValueError, match="task_id"):
        WorktreeFiles(root, "h1", layout="{host}/shared")
    with pytest.raises(ValueError):
        template_layout()
