# Owns: the Codex parts of the `parse` and `deliver` commands (docs/cli.md "Codex turn
# listing"): `run_codex_parse` (list the turns of an app-server stream or rollout file,
# or parse one turn) and `codex_turn_for_delivery` (the text and outcome of the turn to
# deliver). The options themselves are declared by cmd_parse.py and cmd_deliver.py.
#
# Must never: print a traceback, deliver anything itself, or pick a turn that is not
# "completed" by default.
#
# Invariants:
#   Rule 1: the listing JSON is exactly {"turns": [{"thread_id", "turn_id", "status",
#           "blocks", "error"}], "problems": [{"line", "reason"}]}.
#   Rule 2: an unreadable file, a file that holds no Codex record at all (every line a
#           problem, or no line: the wrong file or format), an unknown or ambiguous turn
#           id, or no completed turn to deliver is a usage failure (exit 2, one line on
#           stderr, with the reason).
#   Rule 3: the text listing shows ids, statuses, errors and problem reasons (all taken
#           from the file) with control characters escaped (`\n`, `\x1b`): one turn or
#           problem is always one line, and no escape sequence reaches the terminal.
#           The JSON listing carries the values as they are (JSON escapes them).
from __future__ import annotations

from pathlib import Path
from typing import Any

from markertools import TurnPlan, display_name, parse_turn
from markertools_adapters.cli._app import fail
from markertools_adapters.cli._io import emit_json
from markertools_adapters.codex import (
    CodexInputError,
    CodexTranscript,
    CodexTurn,
    read_app_server_events,
    read_rollout,
)

_MAX_LISTED_IDS = 10
_MAX_REASON_CHARS = 1000


def _cell(value: str) -> str:
    """Rule 3: one table cell of text taken from the file, shown on one line."""
    return display_name(value)


def load_codex_transcript(events: Path | None, rollout: Path | None) -> CodexTranscript:
    """Read the one Codex file given (exit 2 when none, both, or it cannot be read)."""
    if (events is None) == (rollout is None):
        fail("give exactly one of --codex-events FILE or --codex-rollout FILE")
    try:
        if events is not None:
            transcript = read_app_server_events(events)
        else:
            assert rollout is not None
            transcript = read_rollout(rollout)
    except CodexInputError as exc:
        fail(str(exc))
    source = events if events is not None else rollout
    assert source is not None
    why = no_codex_records(transcript, source)
    if why is not None:
        option = "--codex-events" if events is not None else "--codex-rollout"
        fail(f"{option} {source}: {why}")
    return transcript


def no_codex_records(transcript: CodexTranscript, source: Path) -> str | None:
    """Why `source` holds no Codex record at all (Rule 2), or None when it holds one: a
    turn, or a line that was not a problem. A compressed file is judged by its turns and
    problems only (its lines are not counted again)."""
    if transcript.turns:
        return None
    if source.suffix in (".zst", ".zstd"):
        lines = len(transcript.problems) if transcript.problems else 0
    else:
        try:
            with source.open("rb") as handle:
                lines = sum(1 for line in handle if line.strip())
        except OSError:
            return None  # the reader read it; a second read failing is not this check's call
    if lines == 0:
        return "holds no Codex records (the file is empty)"
    if len(transcript.problems) < lines:
        return None
    first = transcript.problems[0]
    reason = display_name(" ".join(str(first.reason).split()), 200)
    return (
        f"holds no Codex records (none of its {lines} line(s) is one; line {first.line}: "
        f"{reason}) - is it the right file and format?"
    )


def block_count(plan: TurnPlan) -> int:
    """The marker blocks of a turn: what delivery would report one entry each for."""
    return len(plan.commands) + len(plan.issues)


def turn_listing(transcript: CodexTranscript) -> dict[str, Any]:
    """Rule 1: the docs/cli.md listing of every turn and problem."""
    return {
        "turns": [
            {
                "thread_id": t.thread_id,
                "turn_id": t.turn_id,
                "status": t.status,
                "blocks": block_count(parse_turn(t.text)),
                "error": t.error,
            }
            for t in transcript.turns
        ],
        "problems": [p.to_json() for p in transcript.problems],
    }


def select_turn(transcript: CodexTranscript, turn: str, source: Path) -> CodexTurn:
    """The turn named `turn` (a turn id, or THREAD/TURN when a turn id is ambiguous)."""
    found = transcript.find(turn)
    if not found and "/" in turn:
        thread, _, turn_id = turn.rpartition("/")
        found = tuple(t for t in transcript.find(turn_id) if t.thread_id == thread)
    if len(found) == 1:
        return found[0]
    if found:
        threads = ", ".join(sorted({t.thread_id for t in found}))
        fail(f"turn {turn} appears in several threads ({threads}); use --turn THREAD/{turn}")
    known = [t.turn_id for t in transcript.turns]
    listed = ", ".join(known[:_MAX_LISTED_IDS]) + (", …" if len(known) > _MAX_LISTED_IDS else "")
    fail(
        f"no turn {turn!r} in {source}"
        + (f"; its turns: {listed}" if known else "; it has no turns")
    )


def run_codex_parse(
    events: Path | None, rollout: Path | None, turn: str | None, as_json: bool
) -> None:
    """`parse --codex-events/--codex-rollout FILE [--turn ID] [--json]`."""
    transcript = load_codex_transcript(events, rollout)
    source = events if events is not None else rollout
    assert source is not None
    if turn is not None:
        chosen = select_turn(transcript, turn, source)
        from markertools_adapters.cli._planout import print_plan

        print_plan(parse_turn(chosen.text), as_json)
        return
    listing = turn_listing(transcript)
    if as_json:
        emit_json(listing)
        return
    print(_listing_text(listing, transcript))


def _listing_text(listing: dict[str, Any], transcript: CodexTranscript) -> str:
    header = ("THREAD", "TURN", "STATUS", "BLOCKS", "NOTE")
    rows: list[tuple[str, ...]] = []
    for row, turn in zip(listing["turns"], transcript.turns, strict=True):
        notes = []
        if row["error"]:
            notes.append("error: " + _cell(" ".join(row["error"].split())))
        if turn.problem_lines and turn.finished:
            where = ", ".join(str(n) for n in turn.problem_lines)
            notes.append(f"not deliverable: overlaps malformed line(s) {where}")
        rows.append(
            (
                _cell(row["thread_id"]),
                _cell(row["turn_id"]),
                _cell(row["status"]),
                str(row["blocks"]),
                "; ".join(notes),
            )
        )
    if rows:
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header) - 1)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=False)) + "  " + r[-1]
            for r in (header, *rows)
        ]
        lines = [x.rstrip() for x in lines]
    else:
        lines = ["no turns"]
    finished = sum(t.finished for t in transcript.turns)
    lines.append(
        f"\n{len(rows)} turn(s): {finished} ended, {len(rows) - finished} still open; "
        f"{len(listing['problems'])} problem line(s)"
    )
    if listing["problems"]:
        lines.extend(
            f"  line {p['line']}: {display_name(p['reason'], _MAX_REASON_CHARS)}"
            for p in listing["problems"]
        )
    return "\n".join(lines)


def codex_turn_for_delivery(events: Path, turn: str | None) -> tuple[str, str]:
    """(agent text, markertools turn outcome) of the turn `deliver --codex-events` delivers:
    the one named by `turn`, else the last completed one. The outcome is the Codex status
    mapped by `OUTCOME_OF_STATUS` ("incomplete" for a completed turn that overlaps a
    malformed line), so only a cleanly completed turn delivers (TRN-3)."""
    transcript = load_codex_transcript(events, None)
    if turn is not None:
        chosen = select_turn(transcript, turn, events)
    else:
        last = transcript.last_completed()
        if last is None:
            statuses = ", ".join(f"{t.turn_id} {t.status}" for t in transcript.turns)
            fail(
                f"no completed turn in {events}"
                + (f" ({statuses}); name one with --turn ID" if statuses else " (no turns)")
            )
        chosen = last
    return chosen.text, chosen.delivery_outcome
