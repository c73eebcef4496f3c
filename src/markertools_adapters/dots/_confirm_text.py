# Owns: what a person is asked to confirm (DOT-14): the two questions before a run
# starts (the plan; the workers and limits to launch), raising the turn budget, and
# widening a worker (dots_tune). Builds `ConfirmRequest` values - title, the readable
# lines (from the message catalogue, in the supervisor's locale) and the same facts as
# JSON-ready details. Pure: no I/O, no answers.
#
# Must never: leave out a fact the confirmation is about (cwd, sandbox, model, limits,
# a thread taken over, each role's first instruction), word one value as another, or
# let text of the proposal start a line of its own: free text (goal, plan, role,
# instruction) is shown as a block below its label, every line of it indented and
# prefixed "| ", wrapped on word boundaries at the width asked for (72 columns by
# default, the terminal's own in `dots run`), its invisible characters escaped
# (`_visible`: `\x1b`, `\u202e`, `\u200b`, a tag character `\U000e0041`), so only
# the catalogue's own lines (the title, `limits: ...`) start at column 0. Names, ids,
# models and paths hold no control characters (PLN validation refused them), and their
# format characters (a zero-width space in a role name) are shown escaped too.
from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final

from markertools import msg
from markertools.plans import HostSettings, Proposal, proposal_to_json
from markertools_adapters.codex.answers import HistoryTurn
from markertools_adapters.dots._ports import ConfirmRequest
from markertools_adapters.dots._visible import escape_char, visible


def say(locale: str, key: str, **args: Any) -> str:
    """A catalogue text rendered in `locale`."""
    return msg(key, **args).render(locale)


FREE_TEXT_LINES: Final[int] = 20  # lines of one free-text field shown (after wrapping)
FREE_TEXT_CHARS: Final[int] = 2_000  # characters of one free-text field shown
WRAP_COLUMNS: Final[int] = 72  # columns of free text on a shown line, unless a width is given
MIN_BODY_COLUMNS: Final[int] = 20  # however narrow the terminal


def escaped(char: str) -> str:
    """`char` as shown (`_visible.escape_char`): a control, format, private-use or
    unassigned character, a tag character or a backslash as its escape (`\\t`,
    `\\x1b`, `\\u202e`, `\\u200b`, `\\U000e0041`, `\\\\`), anything else as itself."""
    return escape_char(char)


def one_line(text: str) -> str:
    """A value shown inside a line (a name, a path, a thread or turn id): escaped."""
    return visible(text)


def _columns(shown: str) -> int:
    width = 0
    for char in shown:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def body_width(columns: int | None, indent: str) -> int:
    """The columns of free text on one shown line: WRAP_COLUMNS, or what is left of a
    terminal `columns` wide after the indent and the "| " prefix (one column spare, so
    the terminal never wraps a full line itself); at least MIN_BODY_COLUMNS."""
    if columns is None:
        return WRAP_COLUMNS
    return max(MIN_BODY_COLUMNS, columns - len(indent) - 3)


def free_text(text: str, indent: str, locale: str, width: int = WRAP_COLUMNS) -> list[str]:
    """Free text as a block of lines, each `indent + "| " + ...` (see the module
    header): line breaks start a new prefixed line, a line wider than `width` columns
    continues on the next, broken after its last space that fits (a word wider than
    a whole line is cut), invisible characters are escaped. At most FREE_TEXT_LINES
    lines and FREE_TEXT_CHARS characters; the rest is counted in a last line "(N more
    characters, not shown)" (the request's details carry the whole text)."""
    text = text.replace("\r\n", "\n")
    out: list[str] = []
    current: list[tuple[int, str, int]] = []  # (position in text, shown, columns)
    stop = len(text)

    def flush(upto: int) -> None:
        """Emit current[:upto] as a line (trailing spaces dropped), keep the rest."""
        nonlocal current
        body = "".join(shown for _, shown, _ in current[:upto]).rstrip(" ")
        out.append(f"{indent}| {body}" if body else f"{indent}|")
        current = current[upto:]
        while current and current[0][1] == " ":  # a wrapped line starts at its word
            current.pop(0)

    def used() -> int:
        return sum(columns for _, _, columns in current)

    for pos, char in enumerate(text):
        if pos >= FREE_TEXT_CHARS:
            stop = pos
            break
        if char == "\n":
            flush(len(current))
            if len(out) == FREE_TEXT_LINES:
                stop = pos + 1
                break
            continue
        shown = escaped(char)
        columns = _columns(shown)
        if current and used() + columns > width and char != " ":
            spaces = [i for i, (_, s, _) in enumerate(current) if s == " "]
            flush(spaces[-1] + 1 if spaces else len(current))
            if len(out) == FREE_TEXT_LINES:
                stop = current[0][0] if current else pos
                break
        current.append((pos, shown, columns))
    if len(out) < FREE_TEXT_LINES and (current or not out):
        flush(len(current))
    elif current and stop == len(text):
        stop = current[0][0]
    if stop < len(text):
        out.append(f"{indent}{say(locale, 'dots.confirm.more_chars', n=len(text) - stop)}")
    return out


def _quota_stop(left: float | None, locale: str) -> str:
    if left is None:
        return msg("dots.confirm.quota_none").render(locale)
    return msg("dots.confirm.quota_at", left=f"{left:g}").render(locale)


def start_requests(
    plan: Proposal,
    heads: Mapping[str, Sequence[HistoryTurn]],
    settings: HostSettings,
    locale: str,
    columns: int | None = None,
) -> tuple[ConfirmRequest, ConfirmRequest]:
    """The plan, then the launch: what `dots_start` asks before anything exists.
    `columns`: the width of the terminal that shows it (None: WRAP_COLUMNS of text)."""

    def block(text: str, indent: str) -> list[str]:
        return free_text(text, indent, locale, body_width(columns, indent))

    def r(key: str, **kw: Any) -> str:
        return say(locale, key, **kw)

    body = proposal_to_json(plan)
    lines = [r("dots.confirm.goal"), *block(plan.goal, "  ")]
    lines += [r("dots.confirm.plan"), *block(plan.plan, "  ")]
    lines.append(r("dots.confirm.workers"))
    for w in plan.workers:
        deps = ", ".join(one_line(d) for d in w.depends_on)
        after = r("dots.confirm.after", deps=deps) if w.depends_on else ""
        lines.append(
            r("dots.confirm.worker_role", name=one_line(w.name), backend=one_line(w.backend), after=after)
        )
        lines += [r("dots.confirm.role_label"), *block(w.role, "      ")]
        lines += [r("dots.confirm.instruction_label"), *block(w.instruction, "      ")]
    first = ConfirmRequest(
        "plan",
        r("dots.confirm.plan.title"),
        "\n".join(lines),
        {
            "goal": plan.goal,
            "plan": plan.plan,
            "workers": [w["name"] for w in body["workers"]],
            "roles": [
                {
                    "name": w.name,
                    "role": w.role,
                    "instruction": w.instruction,
                    "dependsOn": list(w.depends_on),
                }
                for w in plan.workers
            ],
        },
    )
    launch = [r("dots.confirm.workers")]
    workers: list[dict[str, Any]] = []
    for w in plan.workers:
        launch.append(
            r(
                "dots.confirm.worker_launch",
                name=one_line(w.name),
                cwd=one_line(w.cwd),
                sandbox=w.sandbox,
                model=one_line(w.model) if w.model else r("dots.confirm.default_model"),
                effort=one_line(w.effort) if w.effort else r("dots.confirm.default_effort"),
            )
        )
        item: dict[str, Any] = {
            "name": w.name,
            "cwd": w.cwd,
            "sandbox": w.sandbox,
            "model": w.model,
            "effort": w.effort,
        }
        if w.existing_thread_id is not None:
            launch.append(r("dots.confirm.takeover", thread=one_line(w.existing_thread_id)))
            for turn in heads.get(w.name, ()):
                launch.append(
                    r(
                        "dots.confirm.history_turn",
                        turn=one_line(turn.id),
                        user=repr(turn.user),
                        agent=repr(turn.agent),
                    )
                )
            item["existingThreadId"] = w.existing_thread_id
            item["historyHead"] = [t.to_json() for t in heads.get(w.name, ())]
        workers.append(item)
    models = list(plan.allowed_models)
    launch.append(
        r(
            "dots.confirm.limits",
            max_turns=plan.max_turns,
            timeout_ms=plan.timeout_ms,
            max_concurrent=settings.max_concurrent,
            quota_stop=_quota_stop(plan.quota.stop_at_left_percent, locale),
            models=one_line(str(models)) if models else r("dots.confirm.models_none"),
        )
    )
    second = ConfirmRequest(
        "launch",
        r("dots.confirm.launch.title"),
        "\n".join(launch),
        {
            "workers": workers,
            "maxTurns": plan.max_turns,
            "timeoutMs": plan.timeout_ms,
            "maxConcurrent": settings.max_concurrent,
            "allowedModels": models,
        },
    )
    return first, second


def budget_request(run_id: str, old: int, new: int, locale: str) -> ConfirmRequest:
    return ConfirmRequest(
        "budget",
        msg("dots.confirm.budget.title").render(locale),
        msg("dots.confirm.budget", run=run_id, old=old, new=new).render(locale),
        {"runId": run_id, "maxTurns": new},
    )


def tune_request(
    run_id: str, worker: str, widen: Sequence[str], changes: Mapping[str, Any], locale: str
) -> ConfirmRequest:
    return ConfirmRequest(
        "tune",
        msg("dots.confirm.tune.title", worker=worker).render(locale),
        "\n".join(widen),
        {"runId": run_id, "worker": worker, "changes": dict(changes)},
    )
