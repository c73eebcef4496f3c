"""Extraction follows the CommonMark reference implementations (issue 41; docs/parse.md,
"Where the references differ"): on generated documents markertools runs exactly the
blocks cmark-gfm (GitHub's renderer) shows, and differs from markdown-it-py only where
one of the documented overrides D1-D9 (`markertools.parse.cmarkrules`) makes it follow
cmark-gfm. The smallest text of each difference is a golden case below, with the HTML
cmark-gfm renders for it. `make exactness` runs the same check on 200,000 documents."""

from __future__ import annotations

import cmarkgfm.cmark as cmark
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.oracles import assert_follows_the_references, compare
from support.strategies.commonmark_docs import (
    DEF_TAILS,
    DEFINITIONS,
    PARA,
    commonmark_documents,
    random_document,
)
from support.strategies.parse import list_docs, markdownish

from markertools import parse_turn
from markertools.parse.cmarkrules import definitions_end

# ---- generated documents against both references -----------------------------------------


@pytest.mark.rule("EXT-1", "EXT-2", "EXT-3", "EXT-4")
@settings(max_examples=300)
@given(commonmark_documents())
@example('[ref]: http://x.example "t"\n10. item\n    ```task-list\n    {}\n    ```\n')
@example("1. [f]: /u\n [b]: /v\n\n\n    ```task-list\n    {}\n    ```\n")
@example("9.\n   >\n       >a\nb\n\t```task-list\n\t{}\n\t```\n")
def test_generated_documents_follow_the_references(text: str) -> None:
    assert_follows_the_references(text)


@pytest.mark.rule("EXT-1", "EXT-2", "EXT-3", "EXT-4")
def test_seeded_documents_follow_the_references() -> None:
    """2,000 documents of the `make exactness` generator (seeds 0-1999), every run."""
    for seed in range(2000):
        assert_follows_the_references(random_document(seed))


@pytest.mark.rule("EXT-1", "EXT-2", "EXT-6")
@settings(max_examples=200)
@given(st.one_of(markdownish(), list_docs()))
def test_line_pool_documents_follow_the_references(text: str) -> None:
    """The older generators too: their deep lines reach markdown-it's nesting limit,
    the one documented place where markertools runs fewer blocks than cmark-gfm."""
    assert_follows_the_references(text)


# ---- cmark's link reference definitions ---------------------------------------------------

DEFINITION_LINES = [d for d in DEFINITIONS if "\n" not in d] + DEF_TAILS + PARA


@pytest.mark.rule("EXT-2")
@settings(max_examples=400)
@given(st.lists(st.sampled_from(DEFINITION_LINES), min_size=1, max_size=5))
@example(["[ref]: /u", '"two', 'lines"'])
@example(["[a\\]b]: /u", "[ref]: <a>b"])
@example(["[" + "é" * 500 + "]: /u"])
@example(["[" + "é" * 501 + "]: /u"])
def test_definitions_end_where_cmark_stops_reading_definitions(lines: list[str]) -> None:
    """A paragraph is all definitions exactly when cmark-gfm renders nothing for it."""
    text = "".join(line.lstrip(" \t") + "\n" for line in lines)
    assert (definitions_end(text) == len(text)) is (cmark.markdown_to_html(text) == "")


@pytest.mark.rule("EXT-2")
@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('[ref]: http://x.example "t"\n10. item\n', 28),
        ("[ref]: /u\n[r]: u\nx\n", 17),
        ("[ref]: /u 't' junk\n", 0),
        ("[ref]: /u\n'open\n", 10),  # the title never closes: the definition has none
        ("[ref]:\n/url\n'title'\n", 20),  # destination and title on their own lines
        ("[ ]: /u\n", 0),
        ("[x]: <a\nb>\n", 0),
        ("[" + "x" * 1000 + "]: /u\n", 1007),
        ("[" + "x" * 1001 + "]: /u\n", 0),
    ],
)
def test_definitions_end_golden(text: str, end: int) -> None:
    assert definitions_end(text) == end


# ---- the smallest case of each difference ------------------------------------------------

TASK_LIST = '<code class="language-task-list">'

# (id, text, lines of the blocks that run, markdown-it-py's lines, the overrides that explain)
SMALLEST = [
    (
        "issue-41",
        '[ref]: http://x.example "t"\n10. item\n    ```task-list\n    {}\n    ```\n',
        [],
        [3],
        ["D1"],
    ),
    ("D1", "[ref]: /u\n<custom-tag>\n```task-list\n{}\n```\n", [3], [], ["D1"]),
    ("D2", "[ref]: /u\n---\n10. item\n    ```task-list\n    {}\n    ```\n", [], [4], ["D1", "D2"]),
    ("D3", "1. [ref]: /u\n\n\n\t```task-list\n\t{}\n\t```\n", [], [4], ["D1", "D3"]),
    ("D4", "-    * l\n    *\n     ```task-list\n     {}\n     ```\n", [3], [], ["D4"]),
    ("D5", "9. t\n<n>\n```task-list\n{}\n```\n", [], [3], ["D5"]),
    ("D6", "9.\n   >\n       >a\nb\n\t```task-list\n\t{}\n\t```\n", [], [5], ["D6"]),
    ("D7", "*\n  \n\t```task-list\n\t{}\n\t```\n", [3], [], ["D7"]),
    ("D8", "1. [f]: /u\n [b]: /v\n\n\n    ```task-list\n    {}\n    ```\n", [5], [], ["D1", "D8"]),
    ("D9", "- >>  > \th\nn\n    ```task-list\n    {}\n    ```\n", [], [3], ["D9"]),
]


@pytest.mark.rule("EXT-1", "EXT-2")
@pytest.mark.parametrize(
    ("text", "runs", "markdown_it", "explained_by"),
    [case[1:] for case in SMALLEST],
    ids=[case[0] for case in SMALLEST],
)
def test_smallest_cases_run_what_cmark_gfm_shows(
    text: str, runs: list[int], markdown_it: list[int], explained_by: list[str]
) -> None:
    html = cmark.markdown_to_html(text)
    assert html.count(TASK_LIST) == len(runs), html  # what a reader of GitHub sees
    plan = parse_turn(text)
    assert [(c.kind, c.line, c.params.limit) for c in plan.commands] == [
        ("task-list", line, 20) for line in runs
    ]
    assert plan.issues == ()
    verdict = compare(text)
    assert [f.line for f in verdict.markdown_it] == markdown_it
    assert verdict.explained_by == explained_by


@pytest.mark.rule("EXT-2")
def test_issue_41_renders_as_prose_and_nothing_runs() -> None:
    text = '[ref]: http://x.example "t"\n10. item\n    ```task-list\n    {}\n    ```\n'
    assert cmark.markdown_to_html(text) == "<p>10. item\n<code>task-list {} </code></p>\n"
    assert parse_turn(text).commands == ()


@pytest.mark.rule("EXT-1", "EXT-3")
def test_body_indentation_follows_commonmark_js_not_cmark_gfm() -> None:
    """cmark-gfm strips one column less from body lines when the fence's indentation is
    part of a tab a list item split (documented, JSON ignores it): same block, same
    params; the body is markdown-it-py's and commonmark.js's."""
    text = "+\n\t```task-list\n    {}\n  ```\n"
    assert TASK_LIST + " {}\n</code>" in cmark.markdown_to_html(text)
    verdict = compare(text)
    assert verdict.cmark_agrees and not verdict.cmark_exact
    assert [f.body for f in verdict.ours] == ["{}\n"]
    (command,) = parse_turn(text).commands
    assert (command.kind, command.line) == ("task-list", 2)


@pytest.mark.rule("EXT-2", "EXT-6")
def test_past_the_nesting_limit_nothing_runs_though_cmark_gfm_shows_it() -> None:
    text = "- " * 11 + "x\n\n```task-list\n{}\n```\n"
    assert cmark.markdown_to_html(text).count(TASK_LIST) == 1
    assert parse_turn(text).commands == ()
    verdict = compare(text)
    assert verdict.nesting_limit and verdict.cmark_documented and not verdict.problems()
