"""APR-1: the diff summary a Codex file-change request is stored with
(`codex_engine.diff_summary`): what each change does to which path and how many lines it
adds and removes, for any JSON Codex (or a hostile app-server) could send."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools_adapters.worker.codex_engine import DIFF_CHANGES_SHOWN, diff_summary

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@pytest.mark.rule("APR-1")
@given(JSON)
def test_any_json_gives_a_line_or_none_and_never_raises(changes: object) -> None:
    out = diff_summary(changes)
    assert out is None or (isinstance(out, str) and out)


PATH = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
LINE = st.text(st.characters(blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                             blacklist_categories=("Cs",)), max_size=10)
# content that looks like a diff's own syntax once prefixed: "+++", "---", "+@@"
BODY = st.lists(st.sampled_from(["++x", "--", "@@ 1", "+", ""]) | LINE, max_size=12)


@pytest.mark.rule("APR-1")
@given(st.lists(st.tuples(st.sampled_from(["add", "delete", "update"]), PATH, BODY, BODY), max_size=30))
def test_each_change_is_named_with_its_line_counts(spec: list[tuple[str, str, list[str], list[str]]]) -> None:
    changes, expected = [], []
    for kind, path, plus, minus in spec:
        if kind == "add":
            diff = "\n".join(plus)
            expected.append(f"add {path} (+{len(diff.splitlines())} lines)")
        elif kind == "delete":
            diff = "\n".join(minus)
            expected.append(f"delete {path} (-{len(diff.splitlines())} lines)")
        else:
            lines = ["--- a", "+++ b", "@@ -1 +1 @@"] + ["+" + x for x in plus] + ["-" + x for x in minus]
            diff = "\n".join(lines)
            expected.append(f"update {path} (+{len(plus)} -{len(minus)} lines)")
        changes.append({"path": path, "kind": {"type": kind}, "diff": diff})
    out = diff_summary(changes)
    if not spec:
        assert out is None
        return
    shown = expected[:DIFF_CHANGES_SHOWN]
    more = len(expected) - len(shown)
    assert out == "; ".join(shown) + (f"; ... (+{more} more)" if more else "")


@pytest.mark.rule("APR-1")
def test_content_lines_that_look_like_headers_count() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n---x\n+++y\n context"
    change = {"path": "x", "kind": {"type": "update"}, "diff": diff}
    assert diff_summary([change]) == "update x (+1 -1 lines)"


@pytest.mark.rule("APR-1")
def test_a_move_names_both_paths() -> None:
    change = {"path": "a.py", "kind": {"type": "update", "move_path": "b.py"}, "diff": "@@\n-x\n+y\n+z"}
    assert diff_summary([change]) == "update a.py -> b.py (+2 -1 lines)"
