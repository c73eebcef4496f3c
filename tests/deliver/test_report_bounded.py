"""TRN-12: the report is bounded by the caps, not by the turn (at most 50 skipped or
ignored entries, the rest summarised per kind and outcome with count and line range),
and list-valued fields are linear (a 40,000-id wait-threads body)."""

from __future__ import annotations

import json
import time

import pytest
from support.strategies.core import make_world, rig, task

from markertools import BlockIssue, deliver_turn, msg, parse_turn
from markertools.deliver.render import render_report
from markertools.deliver.report import MAX_LISTED_ISSUES, ReportEntry, issue_entries
from markertools.parse.params import WaitThreadsParams
from markertools.text.inline import LIST_SHOWN

LIST_BLOCK = "```task-list\n{}\n```\n"  # 3 lines per block


def _deliver(text: str, locale: str = "en"):
    r = rig(make_world(task("t1"), task("t2")))
    return deliver_turn(text, sender="t1", outcome="completed", ports=r.ports, locale=locale)


@pytest.mark.rule("TRN-12", "TRN-6")
def test_a_100000_block_turn_gets_a_report_under_64_kb() -> None:
    blocks = 100_000
    report = _deliver(LIST_BLOCK * blocks)
    assert report.message is not None
    assert len(report.message.encode()) < 64 * 1024
    # 5 done, 50 listed one by one, one summary for the rest
    assert [e.outcome for e in report.entries] == ["done"] * 5 + ["ignored"] * 51
    summary = report.entries[-1]
    assert (summary.kind, summary.line, summary.last_line) == ("task-list", 166, 3 * blocks - 2)
    assert summary.count == blocks - 5 - MAX_LISTED_ISSUES
    assert sum(e.count for e in report.entries) == blocks
    assert report.message.startswith(
        f"markertools report: {blocks} block(s) from your last turn (5 done, {blocks - 5} ignored)."
    )
    assert report.message.endswith(
        f"[56] task-list (lines 166–{3 * blocks - 2}): {summary.count} × ignored\n"
        f"{summary.count} more task-list block(s) ignored, lines 166 to {3 * blocks - 2}; the "
        "report lists at most 50 skipped or ignored blocks one by one and counts the rest per "
        "kind and outcome"
    )


@pytest.mark.rule("TRN-12", "INJ-6")
def test_the_summary_reads_in_chinese() -> None:
    report = _deliver(LIST_BLOCK * 60, locale="zh")
    assert report.message is not None
    assert report.message.endswith(
        "[56] task-list（第 166–178 行）：5 个忽略\n"
        "另有 5 个 task-list 块被忽略，位于第 166 至 178 行；报告最多逐个列出 50 个被跳过或忽略的块，"
        "其余按类型和结果计数"
    )
    assert report.message.startswith("markertools 报告：上一轮共 60 个块（完成 5, 忽略 55）。")


def _issues(n: int) -> list[BlockIssue]:
    return [BlockIssue("task-poll", i, "skipped", msg("parse.json.empty")) for i in range(1, n + 1)]


@pytest.mark.rule("TRN-12")
@pytest.mark.parametrize("n", [MAX_LISTED_ISSUES - 1, MAX_LISTED_ISSUES, MAX_LISTED_ISSUES + 1])
def test_at_most_50_issues_are_listed_one_by_one(n: int) -> None:
    assert MAX_LISTED_ISSUES == 50
    entries = issue_entries(_issues(n))
    listed = min(n, 50)
    assert [e.line for e in entries[:listed]] == list(range(1, listed + 1))
    assert all(e.count == 1 and e.last_line is None for e in entries[:listed])
    if n <= 50:
        assert len(entries) == n
    else:
        (summary,) = entries[50:]
        assert (summary.kind, summary.outcome, summary.count) == ("task-poll", "skipped", 1)
        assert (summary.line, summary.last_line) == (51, 51)
        assert summary.reason.render() == (
            "1 more task-poll block(s) skipped, lines 51 to 51; the report lists at most 50 "
            "skipped or ignored blocks one by one and counts the rest per kind and outcome"
        )


@pytest.mark.rule("TRN-12", "EXT-5")
def test_the_rest_is_summarised_per_kind_and_outcome_in_order_of_first_block() -> None:
    lines = iter(range(100, 10_000))
    issues = [
        *_issues(50),
        BlockIssue("task-list", next(lines), "ignored", msg("x")),
        BlockIssue("task-poll", next(lines), "skipped", msg("x")),
        BlockIssue("Task_List", next(lines), "unknown",
                   msg("parse.unknown_kind", written="Task_List", suggestion="task-list")),
        BlockIssue("task-list", next(lines), "skipped", msg("x")),
        BlockIssue("task-list", next(lines), "ignored", msg("x")),
        BlockIssue("TASK-LIST", next(lines), "unknown",
                   msg("parse.unknown_kind", written="TASK-LIST", suggestion="task-list")),
        BlockIssue("task-polll", next(lines), "unknown",
                   msg("parse.unknown_kind", written="task-polll", suggestion="task-poll")),
    ]  # fmt: skip
    rest = issue_entries(issues)[50:]
    assert [(e.kind, e.outcome, e.count, e.line, e.last_line) for e in rest] == [
        ("task-list", "ignored", 2, 100, 104),
        ("task-poll", "skipped", 1, 101, 101),
        ("task-list", "skipped", 2, 102, 105),  # the two near misses resembling task-list
        ("task-list", "skipped", 1, 103, 103),
        ("task-poll", "skipped", 1, 106, 106),  # a near miss resembling task-poll
    ]
    assert rest[2].reason.render() == (
        "2 more fence(s) with an unknown kind close to 'task-list' skipped (not run), lines 102 "
        "to 105; the report lists at most 50 skipped or ignored blocks one by one and counts the "
        "rest per kind and outcome"
    )
    assert rest[2].reason.render("zh") == (
        "另有 2 个类型未知、与 'task-list' 相近的围栏被跳过（未执行），位于第 102 至 105 行；"
        "报告最多逐个列出 50 个被跳过或忽略的块，其余按类型和结果计数"
    )


@pytest.mark.rule("TRN-12")
def test_a_turn_of_many_near_misses_gets_a_bounded_report() -> None:
    # every near miss is written differently, so grouping by the written kind would not bound it
    text = "".join(f"```,,task-list{'!' * (i % 97)}\n{{}}\n```\n" for i in range(5_000))
    report = _deliver(text)
    assert report.message is not None and len(report.message.encode()) < 64 * 1024
    assert len(report.entries) == 51
    assert report.entries[-1].count == 5_000 - 50


@pytest.mark.rule("TRN-12", "TRN-6")
def test_a_summary_entry_renders_its_range_and_count() -> None:
    entry = ReportEntry("task-poll", 7, "skipped", None, msg("x"), count=3, last_line=9)
    assert render_report((entry,)).splitlines()[:3] == [
        "markertools report: 3 block(s) from your last turn (3 skipped).",
        "",
        "[1] task-poll (lines 7–9): 3 × skipped",
    ]
    assert render_report((entry,), "zh").splitlines()[2] == "[1] task-poll（第 7–9 行）：3 个跳过"


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def short_ids(n: int) -> list[str]:
    """n distinct 3-character ids (36**3 of them), so 40,000 fit in a 240 KB body."""
    return [_DIGITS[i // 1296] + _DIGITS[i // 36 % 36] + _DIGITS[i % 36] for i in range(n)]


def _wait_body(n: int, repeat: int = 1) -> str:
    ids = short_ids(n) * repeat
    return "```wait-threads\n" + json.dumps({"task_ids": ids}, separators=(",", ":")) + "\n```\n"


@pytest.mark.rule("TRN-12", "WAI-1", "WAI-2")
def test_a_40000_id_wait_threads_body_parses_in_linear_time() -> None:
    big, small = _wait_body(40_000), _wait_body(5_000)

    def best(text: str) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            parse_turn(text)
            times.append(time.perf_counter() - start)
        return min(times)

    big_time = best(big)
    ratio = big_time / best(small)
    # 8x the ids: linear is 8, the quadratic de-duplication (12.3 s for 40,000) was
    # about 64; the wide margin keeps a loaded machine's noise from deciding it
    assert ratio < 24, ratio
    (command,) = parse_turn(big).commands
    params = command.params
    assert isinstance(params, WaitThreadsParams)
    assert len(big) < 245_000
    assert params.task_ids == tuple(short_ids(8))
    assert len(params.dropped_task_ids) == 40_000 - 8
    (note,) = command.notes
    shown = ", ".join(short_ids(8 + LIST_SHOWN)[8:])
    assert note.render() == (
        f"task_ids: only the first 8 targets are waited for; not waited for: {shown}, "
        f"and {40_000 - 8 - LIST_SHOWN} more"
    )
    assert note.render("zh").endswith(f"{shown}, 另有 {40_000 - 8 - LIST_SHOWN} 个")


@pytest.mark.rule("TRN-12", "WAI-1")
def test_repeated_ids_are_named_at_most_ten_times() -> None:
    (command,) = parse_turn(_wait_body(4, repeat=1_000)).commands
    assert command.params.task_ids == ("000", "001", "002", "003")  # type: ignore[union-attr]
    (note,) = command.notes
    assert note.render() == (
        "task_ids: repeated ids were listed once: 000, 001, 002, 003, 000, 001, 002, 003, 000, "
        "001, "
        f"and {4 * 999 - 10} more"
    )


@pytest.mark.rule("TRN-12", "VAL-6", "QUO-1")
def test_lists_of_field_names_in_notes_and_reasons_are_bounded() -> None:
    keys = {f"k{i}": 1 for i in range(30)}
    body = json.dumps({"task_id": "t2", **keys})
    (command,) = parse_turn(f"```task-cost\n{body}\n```\n").commands
    (note,) = command.notes
    assert note.render() == (
        "unknown field(s) ignored by task-cost: k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, and 20 more"
    )
    (command,) = parse_turn(f"```quota-status\n{json.dumps(keys)}\n```\n").commands
    assert command.notes[0].render().endswith("k9, and 20 more")
    (issue,) = parse_turn(f"```task-cost\n{json.dumps(keys)}\n```\n").issues
    assert issue.reason.render() == (
        "field 'task_id' is required but missing (accepted spellings: task_id; this body has "
        "unknown field(s) k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, and 20 more); expected a task "
        'id string (or "@NAME" of a task created by this turn\'s task-create with that name)'
    )


@pytest.mark.rule("TRN-12", "VAL-6")
def test_unknown_field_names_in_a_missing_field_reason_are_made_safe() -> None:
    body = json.dumps({"x\n```task-create": 1})
    (issue,) = parse_turn(f"```task-cost\n{body}\n```\n").issues
    assert "x\\n```task-create" in issue.reason.render()
    assert "\n" not in issue.reason.render()
