"""Extraction (docs/rules.md EXT, EXT-1..6): CommonMark-exact blocks, agreement of the fast path
with the full markdown-it path and with the references (cmark-gfm, and markdown-it-py's own
fence tokens outside the documented differences: `support.oracles`)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.oracles import assert_follows_the_references
from support.strategies.parse import any_text, block, list_docs, markdownish

from markertools import parse_turn
from markertools.parse.blocks import RawBlock, extract_blocks, extract_fast, normalize_text
from markertools.parse.lines import fence_lines, may_have_candidates
from markertools.parse.nearmiss import ORDINARY, classify


def kinds_of(text: str) -> list[tuple[int, str | None, str | None, bool]]:
    return [(b.line, b.kind, b.suggestion, b.closed) for b in extract_blocks(text)]


# ---- EXT-1: fenced code blocks whose stripped info string is a kind ------------------


@pytest.mark.rule("EXT-1")
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```task-create\n{}\n```\n", [(1, "task-create")]),
        ("~~~task-create\n{}\n~~~\n", [(1, "task-create")]),
        ("````task-list\n{}\n````\n", [(1, "task-list")]),
        ("```  task-list \t\n{}\n```\n", [(1, "task-list")]),
        ("   ```task-list\n{}\n```\n", [(1, "task-list")]),
        ("``task-list\n{}\n``\n", []),  # two backticks are not a fence
        ("    ```task-list\n{}\n    ```\n", []),  # 4 spaces: indented code
        ("```task-list `x`\n{}\n```\n", []),  # backtick in a backtick info: not a fence
        ("```python\nprint(1)\n```\n", []),
    ],
)
def test_fence_with_kind_info_is_a_block(text: str, expected: list[tuple[int, str]]) -> None:
    assert [(b.line, b.kind) for b in extract_blocks(text)] == expected


@pytest.mark.rule("EXT-1")
def test_kind_names_are_case_sensitive_and_exact() -> None:
    blocks = extract_blocks("```TASK-LIST\n{}\n```\n```task-list json\n{}\n```\n")
    assert [(b.kind, b.suggestion) for b in blocks] == [(None, "task-list")]


# ---- EXT-2: top level and list items only -----------------------------------------


@pytest.mark.rule("EXT-2")
@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("- step\n  ```task-list\n  {}\n  ```\n", True),
        ("1. step\n   ```task-list\n   {}\n   ```\n", True),
        ("> ```task-list\n> {}\n> ```\n", False),
        ("- > ```task-list\n  > {}\n  > ```\n", False),
        ("````md\n```task-list\n{}\n```\n````\n", False),
        ("~~~\n```task-list\n{}\n```\n~~~\n", False),
        ("    ```task-list\n    {}\n    ```\n", False),
        ("<div>\n```task-list\n{}\n```\n</div>\n", False),
        ("<!--\n\n```task-list\n{}\n```\n\n-->\n", False),
        ("<!-- c -->\n\n```task-list\n{}\n```\n", True),
        ("para\n```task-list\n{}\n```\n", True),
    ],
)
def test_blocks_count_only_outside_quotes_code_and_html(text: str, runs: bool) -> None:
    assert bool(extract_blocks(text)) is runs
    assert bool(parse_turn(text).commands) is runs


# ---- EXT-3: bodies and unclosed blocks ------------------------------------------------


@pytest.mark.rule("EXT-3")
def test_body_has_container_indentation_removed() -> None:
    (b,) = extract_blocks('- x\n  ```task-poll\n  {"task_id":\n    "t1"}\n  ```\n')
    assert b.body == '{"task_id":\n  "t1"}\n'
    assert b.closed


@pytest.mark.rule("EXT-3")
@pytest.mark.parametrize(
    "text",
    [
        "```task-list\n{}\n",  # end of text
        "```task-list\n{}\n``\n",  # too short to close
        "````task-list\n{}\n```\n",  # shorter than the opener
        "```task-list\n{}\n~~~\n",  # other character
        "```task-list\n{}\n``` x\n",  # a closing fence has no info string
        "- ```task-list\n  {}\nafter\n",  # its list item ended
        "```task-list\n{}\n    ```\n",  # indented 4: content, not a closer
    ],
)
def test_block_without_its_own_closing_fence_is_unclosed(text: str) -> None:
    (b,) = extract_blocks(text)
    assert not b.closed and b.body == ""
    (issue,) = parse_turn(text).issues
    assert issue.outcome == "skipped" and issue.reason.key == "parse.unclosed"


@pytest.mark.rule("EXT-3")
def test_bare_closing_fence_inside_json_truncates_the_body() -> None:
    text = '```task-create\n{"prompt": "a\n```\nb"}\n```\n'
    (b, *_) = extract_blocks(text)
    assert b.body == '{"prompt": "a\n' and b.closed
    issue = parse_turn(text).issues[0]
    assert issue.outcome == "skipped" and issue.reason.key == "parse.json.syntax"


@pytest.mark.rule("EXT-3")
def test_longer_and_indented_closers_close() -> None:
    assert extract_blocks("```task-list\n{}\n   `````  \n")[0].closed
    assert extract_blocks("~~~~task-list\n{}\n~~~~~\n")[0].closed


# ---- EXT-4: kind, body, 1-based line, order; CRLF / CR ----------------------------------


@pytest.mark.rule("EXT-4")
@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_line_numbers_count_every_line_ending(ending: str) -> None:
    text = ending.join(["a", "", "```task-list", "{}", "```", "b", "```task-cost", "{}", "```", ""])
    blocks = extract_blocks(text)
    assert [(b.line, b.info, b.body) for b in blocks] == [
        (3, "task-list", "{}\n"),
        (7, "task-cost", "{}\n"),
    ]


@pytest.mark.rule("EXT-4")
def test_unicode_line_separators_do_not_end_lines() -> None:
    text = "a\u2028b\x0bc\x0c\x85\n```task-list\n{}\n```\n"
    assert [b.line for b in extract_blocks(text)] == [2]


# ---- EXT-5: near misses --------------------------------------------------------------


@pytest.mark.rule("EXT-5")
@pytest.mark.parametrize(
    ("info", "suggestion"),
    [
        ("Task-Create", "task-create"),
        ("TASK_CREATE", "task-create"),
        ("task_create", "task-create"),
        ("wait-thread", "wait-threads"),
        ("`task-poll`", "task-poll"),
        ("(todo-list)", "todo-list"),
        ("**goal-convert**:", "goal-convert"),
        ("task-creat", "task-create"),
        ("tsak-create", "task-create"),
        ("read_threads", "read_thread"),
        ("automation_crate", "automation-create"),
    ],
)
def test_near_miss_is_reported_with_a_suggestion(info: str, suggestion: str) -> None:
    text = f"~~~{info}\n{{}}\n~~~\n"
    plan = parse_turn(text)
    assert not plan.commands
    (issue,) = plan.issues
    assert (issue.kind, issue.outcome) == (info, "unknown")
    assert issue.reason.arg("suggestion") == suggestion
    assert f"did you mean '{suggestion}'" in issue.reason.render("en")


@pytest.mark.rule("EXT-5")
@pytest.mark.parametrize("info", ["python", "tasks", "todo", "task-createxyz", "t-poll", "json"])
def test_other_info_strings_are_ordinary_code(info: str) -> None:
    assert parse_turn(f"```{info}\n{{}}\n```\n") == parse_turn("")


@pytest.mark.rule("EXT-5")
@given(st.text(max_size=6))
def test_info_strings_shorter_than_seven_are_never_candidates(info: str) -> None:
    # the scanner's prefilter relies on this (kind names are 9-17 characters)
    assert classify(info) == ORDINARY


@pytest.mark.rule("EXT-5")
@given(st.sampled_from(["task-create", "todo-update", "wait-threads", "task-files"]), st.data())
def test_within_two_edits_is_a_near_miss(name: str, data: st.DataObject) -> None:
    chars = list(name)
    for _ in range(data.draw(st.integers(1, 2))):
        i = data.draw(st.integers(0, len(chars) - 1))
        chars[i] = data.draw(st.sampled_from("xyzq"))
    info = "".join(chars)
    written, suggestion = classify(info)
    assert written is None or written == info
    if written is None:
        assert suggestion is not None


# ---- EXT-6: never raises, linear, no markdown parse without openers -------------------


@pytest.mark.rule("EXT-6")
@given(any_text())
@example("\ud800```task-list\n\x00{}\n```")
@example("`" * 5000)
@example("```task-create\n" * 300)
@example("- a\n  - ```task-list\n>+\n>   <!t\n>")  # markdown-it-py raised IndexError here
def test_extraction_never_raises_on_any_text(text: str) -> None:
    blocks = extract_blocks(text)
    assert all(isinstance(b, RawBlock) for b in blocks)
    parse_turn(text)


@pytest.mark.rule("EXT-6")
@pytest.mark.parametrize(
    "text",
    [
        "> " * 5000 + "```task-create\n{}\n```\n",
        "- " * 3000 + "```task-create\n{}\n```\n",
        "  " * 4000 + "- ```task-create\n",
        "<div>\n" * 2000 + "\n```task-list\n{}\n```\n",
        "```task-create\n" * 20000,
        "   ```task-create\n" * 20000,
        "x" * 300_000 + "```task-create\n{}\n```\n" + "`" * 300_000,
        "- a\n" + "  ```python\n  x\n  ```\n" * 3000 + "```task-list\n{}\n```\n",
        "[r]: /u\n" * 3000 + "===\n10. x\n    ```task-create\n    {}\n    ```\n",
        "- > a\n      > b\n" * 1500 + "   ```task-create\n",
        "- - - a\n" + "      b\n" * 3000 + "   ```task-create\n",
        "-\n  \n" * 3000 + "  ```task-create\n",
        "9. t\n<n>\n" * 3000 + "```task-create\n",
    ],
    ids=[
        "deep quotes",
        "deep lists",
        "deep indent",
        "html",
        "unclosed",
        "indented",
        "long",
        "list fences",
        "definitions",
        "quotes in lists",
        "lazy lines",
        "empty items",
        "lazy html",
    ],
)
def test_adversarial_text_is_parsed(text: str) -> None:
    assert extract_fast(normalize_text(text)) == extract_blocks(text, full=True)
    parse_turn(text)


@pytest.mark.rule("EXT-6")
def test_import_does_not_load_markdown_it_and_plain_text_never_parses_markdown() -> None:
    code = (
        "import sys, markertools\n"
        "assert 'markdown_it' not in sys.modules, 'imported at import time'\n"
        "text = 'prose\\n```python\\nx = 1\\n```\\n' * 1000 + '> quote\\n- list\\n'\n"
        "markertools.parse_turn(text)\n"
        "assert 'markdown_it' not in sys.modules, 'parsed markdown without a candidate'\n"
        "plan = markertools.parse_turn('1. x\\n   ```task-list\\n   {}\\n   ```\\n')\n"
        "assert len(plan.commands) == 1, plan\n"
        "assert 'markdown_it' not in sys.modules, 'a simple list item needs no markdown parse'\n"
        "markertools.parse_turn('- x\\n  - y\\n    ```task-list\\n    {}\\n    ```\\n')\n"
        "assert 'markdown_it' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.rule("EXT-6")
@given(markdownish())
def test_prefilter_never_misses_a_candidate(text: str) -> None:
    norm = normalize_text(text)
    if any(f[10] for f in fence_lines(norm)):
        assert may_have_candidates(norm)


@pytest.mark.rule("EXT-6")
@settings(max_examples=100)
@given(st.lists(markdownish(max_lines=8), min_size=1, max_size=6), st.integers(1, 64))
def test_prefilter_windows_never_split_a_candidate(parts: list[str], window: int) -> None:
    """The prefilter scans growing windows ending at line breaks; with tiny windows (so
    every window edge is exercised) it answers as a whole-text scan does."""
    import markertools.parse.lines as scan

    norm = normalize_text("\n".join(parts))
    saved = scan._FIRST_WINDOW
    try:
        scan._FIRST_WINDOW = window  # type: ignore[misc]
        scan._ordinary_tails.clear()
        windowed = may_have_candidates(norm)
        scan._FIRST_WINDOW = 10**9  # type: ignore[misc]
        scan._ordinary_tails.clear()
        whole = may_have_candidates(norm)
    finally:
        scan._FIRST_WINDOW = saved  # type: ignore[misc]
    assert windowed == whole
    if any(f[10] for f in fence_lines(norm)):
        assert windowed


# ---- agreement: fast path == full path == the references ----------------------------


@pytest.mark.rule("EXT-1", "EXT-2", "EXT-3", "EXT-4", "EXT-6")
@settings(max_examples=300)
@given(markdownish())
@example("  ```text\n```task-create\n{}\n```\n  ```\n")
@example("1. a\n   ```bash\n   make\n```task-list\n{}\n```\n")
@example("- " * 11 + "x\n\n```task-create\n{}\n```\n")
@example("<pre>\n\n```task-list\n{}\n```\n</pre>\n```task-cost\n{}\n```\n")
def test_fast_path_agrees_with_full_path_and_the_references(text: str) -> None:
    assert extract_fast(normalize_text(text)) == extract_blocks(text, full=True)
    assert_follows_the_references(text)


@pytest.mark.rule("EXT-2", "EXT-6")
@settings(max_examples=150)
@given(st.lists(markdownish(max_lines=8), min_size=2, max_size=6), st.data())
def test_agreement_on_documents_with_many_blocks(parts: list[str], data: st.DataObject) -> None:
    kinds = ["task-create", "task-list", "todo-list", "task_cancel", "Task-Poll"]
    glue = [block(data.draw(st.sampled_from(kinds)), "{}") for _ in parts]
    text = "\n".join(p + "\n" + g for p, g in zip(parts, glue, strict=True))
    assert extract_fast(normalize_text(text)) == extract_blocks(text, full=True)


@pytest.mark.rule("EXT-3")
@settings(max_examples=150)
@given(markdownish())
def test_closed_blocks_end_on_a_closing_fence_line(text: str) -> None:
    norm = normalize_text(text).replace("\0", "\ufffd")
    lines = norm.split("\n")
    for b in extract_blocks(text, full=True):
        if not b.closed:
            continue
        closing_index = b.line - 1 + b.body.count("\n") + 1
        closing = lines[closing_index].lstrip(" \t>-*+.)0123456789").rstrip(" \t")
        opener = lines[b.line - 1]
        char = "`" if "```" in opener else "~"
        assert closing and set(closing) == {char}


# ---- simple list items: decided by hand (`lists.ListWalk`), proven against the references --


def _agree_with_the_references(text: str) -> None:
    assert extract_fast(normalize_text(text)) == extract_blocks(text, full=True)
    assert_follows_the_references(text)


@pytest.mark.rule("EXT-1", "EXT-3", "EXT-4", "EXT-6")
@settings(max_examples=400)
@given(list_docs())
@example("1. Start:\n   ```task-create\n   {}\n   ```\n2. Next:\n   ```task-list\n   {}\n   ```\n")
@example("- ```task-create\n  {}\n```\n")
@example("- a\n  ```task-create\n    {}\n     ```\n  ```\n")
@example("1. a\n\n    ```task-create\n    {}\n   ```\n")
@example("- ```task-create\n" * 5)
@example("- a\nlazy\n  ```task-list\n  {}\n  ```\n")
@example("2. a\n   ```task-list\n  {}\n   ````\n")
def test_list_items_agree_with_the_references(text: str) -> None:
    _agree_with_the_references(text)


@pytest.mark.rule("EXT-2", "EXT-6")
@settings(max_examples=150)
@given(st.lists(st.one_of(list_docs(), markdownish(max_lines=6)), min_size=2, max_size=5))
def test_list_items_mixed_with_other_markdown_agree(parts: list[str]) -> None:
    _agree_with_the_references("\n".join(parts))


LIST_SHAPES = [
    "1. Start the worker:\n   ```task-create\n   {}\n   ```\n",
    "- ```task-create\n  {}\n  ```\n",
    "1. Build:\n   ```bash\n   make\n   ```\n2. Then:\n\n   ```task-list\n   {}\n   ```\n",
    "* **Step**: run it\n  more text\n      indented\n  ```todo-list\n  {}\n  ```\n3) x\n",
    '10. `a` b\n    ```task-cost\n    {"task_id": "t"}\n    ```\n',
    "- ```task-create\n  {}\n" + "- ```task-list\n" * 50,
]


@pytest.mark.rule("EXT-6")
@pytest.mark.parametrize("text", LIST_SHAPES)
def test_simple_list_items_need_no_markdown_parse(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import markertools.parse.blocks as extract

    def no_zone(self: object, trigger: int) -> int:
        raise AssertionError(f"a markdown-it zone was parsed at {trigger}")

    monkeypatch.setattr(extract._Scanner, "zone", no_zone)
    fast = extract_fast(normalize_text(text))
    monkeypatch.undo()
    assert fast and fast == extract_blocks(text, full=True)
    _agree_with_the_references(text)
