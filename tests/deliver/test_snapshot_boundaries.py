"""Boundaries of the snapshot's output cut (POL-4, issue 20): the output text is cut to
its last `chars` code points with a note of how much was cut, tested at chars-1, chars
and chars+1 code points for the `chars` values the task-poll clamp allows at both ends
(POL-1) and its default, in one- and multi-byte characters; on the pure snapshot
function and through task-poll and wait-threads. The whole text an agent reads is
asserted."""

from __future__ import annotations

import re

import pytest
from support.framing import first_nonce, framed_en
from support.strategies.core import make_world, poll, rig, task, wait

from markertools.deliver.snapshot import ERROR_SEPARATOR, snapshot
from markertools.domain.model import Task
from markertools.parse.kinds import KINDS
from markertools.parse.params import TaskPollParams, WaitThreadsParams
from markertools_adapters.clock import SeededRandom


def _clamp(kind_name: str) -> tuple[int, int]:
    (kind,) = [k for k in KINDS if k.name == kind_name]
    clamp = kind.field("chars").clamp
    assert clamp is not None
    return clamp


POLL_LOW, POLL_HIGH = _clamp("task-poll")
DEFAULT_CHARS = TaskPollParams("t").chars
# chars values: both ends of the clamp the parser applies, and the default
CHARS = [POLL_LOW, DEFAULT_CHARS, POLL_HIGH]


def _check_constants() -> None:
    assert (POLL_LOW, POLL_HIGH) == (200, 8000)  # POL-1's clamp of chars
    assert _clamp("wait-threads") == (POLL_LOW, POLL_HIGH)
    assert DEFAULT_CHARS == WaitThreadsParams(("t",)).chars == 2000


def _output(task_id: str, total: int, kept: str, nonce: str) -> str:
    """The output part of a snapshot, as rendered in English."""
    cut = total - len(kept)
    if cut:
        head = f"output: the last {len(kept)} of {total} characters ({cut} earlier characters cut):"
    else:
        head = f"output ({total} characters, complete):"
    return f"{head}\n{framed_en(f'output of task {task_id}', kept, nonce)}"


def _text(length: int, char: str) -> str:
    """`length` code points whose first and last ones differ from the rest, so that
    which end was kept is visible."""
    assert length >= 2
    return "<" + char * (length - 2) + ">"


@pytest.mark.rule("POL-4", "DOM-4")
@pytest.mark.parametrize("chars", CHARS)
@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("char", ["x", "é", "界"])
def test_snapshot_keeps_the_last_chars_code_points(chars: int, delta: int, char: str) -> None:
    _check_constants()
    total = chars + delta
    text = _text(total, char)
    target = Task("t2", "p1", status="completed", result_text=text, model="gpt-5")
    shown = snapshot(
        target, chars=chars, state="finished", waited=0.0, random=SeededRandom(3), locale="en"
    ).render("en")
    kept = text[-chars:]
    assert (kept == text) is (delta <= 0)
    assert shown == (
        "task t2: status 'completed', finished; model gpt-5.\n"
        + _output("t2", total, kept, first_nonce(shown))
    )
    zh = snapshot(
        target, chars=chars, state="finished", waited=0.0, random=SeededRandom(3), locale="zh"
    ).render("zh")
    if delta > 0:
        assert f"输出：共 {total} 字中的最后 {chars} 字（前面 1 字已截去）：" in zh
    else:
        assert f"输出（共 {total} 字，完整）：" in zh


@pytest.mark.rule("POL-4")
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_result_and_error_text_are_cut_together(delta: int) -> None:
    _check_constants()
    chars = POLL_LOW
    result = "r" * 50
    error = "e" * (chars + delta - len(result) - len(ERROR_SEPARATOR))
    whole = result + ERROR_SEPARATOR + error
    assert len(whole) == chars + delta
    target = Task("t2", "p1", status="failed", result_text=result, error_text=error)
    shown = snapshot(
        target, chars=chars, state="finished", waited=0.0, random=SeededRandom(3), locale="en"
    ).render("en")
    assert shown == (
        "task t2: status 'failed', finished; model unknown.\n"
        + _output("t2", len(whole), whole[-chars:], first_nonce(shown))
    )


@pytest.mark.rule("POL-4", "POL-1")
@pytest.mark.parametrize("chars", [POLL_LOW, POLL_HIGH])
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_task_poll_cuts_the_output_at_chars(chars: int, delta: int) -> None:
    _check_constants()
    total = chars + delta
    text = _text(total, "文")
    world = make_world(task("t1"), task("t2", status="completed", result_text=text))
    report = rig(world).deliver(poll("t2", chars=chars))
    (entry,) = report.entries
    assert entry.outcome == "done"
    shown = entry.reason.render("en")
    assert shown == (
        "task t2: status 'completed', finished; model unknown.\n"
        + _output("t2", total, text[-chars:], first_nonce(shown))
    )


@pytest.mark.rule("POL-4", "WAI-3")
@pytest.mark.parametrize("delta", [-1, 0, 1])
def test_wait_threads_cuts_each_output_at_chars(delta: int) -> None:
    _check_constants()
    chars = POLL_LOW
    texts = {"t2": _text(chars + delta, "a"), "t3": _text(chars - delta, "b")}
    world = make_world(
        task("t1"),
        *(task(i, status="completed", result_text=t) for i, t in texts.items()),
    )
    report = rig(world).deliver(wait("t2", "t3", chars=chars))
    (entry,) = report.entries
    shown = entry.reason.render("en")
    nonces = re.findall(r"<<<BEGIN DATA ([0-9a-f]+)>>>", shown)
    assert len(nonces) == 2
    sections = [
        f"task {task_id}: status 'completed', finished; model unknown.\n"
        + _output(task_id, len(text), text[-chars:], nonce)
        for (task_id, text), nonce in zip(texts.items(), nonces, strict=True)
    ]
    assert shown == (
        "waited 0 s for 2 task(s): 2 finished, 0 not finished; 0 target(s) settled at once\n\n"
        + "\n\n".join(sections)
    )
