"""Pure path validation for task-files (FIL-4) and task ids as path components (FIL-5)."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools.deliver.paths import (
    DISPLAY_MAX_CHARS,
    MAX_PATH_CHARS,
    RelativePath,
    check_relative_path,
    display_name,
    task_id_component_problem,
)
from markertools.domain.decision import Denied

_segment = st.one_of(
    st.sampled_from(["..", ".", "", "a", "b.txt", "src", "...", ". .", "C:", "x:y"]),
    st.text(alphabet=st.characters(blacklist_characters="/\\\x00"), min_size=1, max_size=8),
)
_path = st.lists(_segment, max_size=8).flatmap(
    lambda parts: st.sampled_from(["/", "\\"]).map(lambda sep: sep.join(parts))
)


@pytest.mark.rule("FIL-4")
@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/etc/passwd", "files.path_absolute"),
        ("\\Windows\\system32", "files.path_absolute"),
        ("C:\\Windows", "files.path_drive"),
        ("c:relative", "files.path_drive"),
        ("//server/share/x", "files.path_unc"),
        ("\\\\server\\share", "files.path_unc"),
        ("\\\\?\\C:\\x", "files.path_unc"),
        ("..", "files.path_dotdot"),
        ("../x", "files.path_dotdot"),
        ("a/../b", "files.path_dotdot"),
        ("a/..", "files.path_dotdot"),
        ("a\\..\\..\\b", "files.path_dotdot"),
        ("a\x00b", "files.path_nul"),
        ("x" * (MAX_PATH_CHARS + 1), "files.path_too_long"),
    ],
)
def test_rejected_paths_name_the_problem(path: str, key: str) -> None:
    result = check_relative_path(path)
    assert isinstance(result, Denied)
    assert result.reason.key == key
    rendered = result.reason.render("en")
    assert "\x00" not in rendered
    assert result.reason.render("zh") != rendered


@pytest.mark.rule("FIL-1", "FIL-4")
@pytest.mark.parametrize(
    ("path", "parts"),
    [
        (None, ()),
        ("", ()),
        (".", ()),
        ("./", ()),
        ("a", ("a",)),
        ("./a//b/", ("a", "b")),
        ("src\\main.py", ("src", "main.py")),
        ("...", ("...",)),
        ("..a/b..", ("..a", "b..")),
        ("~/x", ("~", "x")),
        ("ab:c", ("ab:c",)),  # only a single leading letter + ":" is a drive
    ],
)
def test_accepted_paths_normalise(path: str | None, parts: tuple[str, ...]) -> None:
    result = check_relative_path(path)
    assert result == RelativePath(parts)
    assert result.is_top_level == (parts == ())


@pytest.mark.rule("FIL-4")
@given(_path)
def test_accepted_paths_never_climb(path: str) -> None:
    """Rule 1: an accepted path's components, joined under a directory, stay below it;
    every component is a plain name."""
    result = check_relative_path(path)
    if isinstance(result, Denied):
        return
    for part in result.parts:
        assert part not in ("", ".", "..")
        assert "/" not in part and "\\" not in part and "\x00" not in part
    joined = posixpath.normpath(posixpath.join("/wt", *result.parts))
    assert joined == "/wt" or joined.startswith("/wt/")
    # and no path that contains a ".." segment is ever accepted
    segments = path.replace("\\", "/").split("/")
    assert ".." not in segments


@pytest.mark.rule("FIL-4")
@given(st.text(max_size=300))
def test_check_relative_path_never_raises(path: str) -> None:
    result = check_relative_path(path)
    assert isinstance(result, (RelativePath, Denied))
    if "\x00" in path:
        assert isinstance(result, Denied)


@given(st.text(max_size=400))
def test_display_name_is_one_safe_line(name: str) -> None:
    shown = display_name(name)
    assert len(shown) <= DISPLAY_MAX_CHARS
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert "\u2028" not in shown and "\u2029" not in shown
    shown.encode("utf-8")  # no lone surrogate survives


def test_display_name_escapes_undecodable_bytes() -> None:
    name = b"caf\xe9-\xff.txt".decode("utf-8", "surrogateescape")
    assert display_name(name) == "caf\\xe9-\\xff.txt"
    assert display_name("line\nbreak\x1b[31m") == "line\\nbreak\\x1b[31m"
    assert display_name("ok ü 文件") == "ok ü 文件"


@pytest.mark.rule("FIL-5")
@pytest.mark.parametrize(
    "task_id", ["", ".", "..", "a/b", "a\\b", "a\x00b", "a\nb", "x" * 201, "é" * 101]
)
def test_unusable_task_ids(task_id: str) -> None:
    assert task_id_component_problem(task_id) is not None


@pytest.mark.rule("FIL-5")
@pytest.mark.parametrize("task_id", ["t1", "t-0123abcd", "...x", "任务一", "a b", "x" * 200])
def test_usable_task_ids(task_id: str) -> None:
    assert task_id_component_problem(task_id) is None


@pytest.mark.rule("FIL-5")
@given(st.text(max_size=60))
def test_usable_task_id_is_one_component(task_id: str) -> None:
    if task_id_component_problem(task_id) is None:
        joined = posixpath.normpath(posixpath.join("/root/tenants", task_id))
        assert posixpath.dirname(joined) == "/root/tenants"
