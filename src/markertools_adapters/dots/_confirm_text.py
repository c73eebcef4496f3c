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
# prefixed "| ", cut at 72 columns, its control characters escaped (`\x1b`,
# `\u202e`), so only the catalogue's own lines (the title, `limits: ...`) start at
# column 0. Names, ids, models and paths hold no control characters (PLN validation
# refused them).
from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Final

from markertools import msg
from markertools.plans import HostSettings, Proposal, is_control_character, proposal_to_json
from markertools_adapters.codex.answers import HistoryTurn
from markertools_adapters.dots._ports import ConfirmRequest


def say(locale: str, key: str, **args: Any) -> str:
    """A catalogue text rendered in `locale`."""
    return msg(key, **args).render(locale)


FREE_TEXT_LINES: Final[int] = 20  # lines of one free-text field shown (after wrapping)
FREE_TEXT_CHARS: Final[int] = 2_000  # characters of one free-text field shown
WRAP_COLUMNS: Final[int] = 72  # a shown line of free text is cut at this many columns
_ESCAPES: Final[dict[str, str]] = {"\t": "\\t", "\r": "\\r"}


def escaped(char: str) -> str:
    """`char` as shown: a control character (`is_control_character`) or a lone
    surrogate as its escape (`\\t`, `\\x1b`, `\\u202e`), anything else as itself."""
    if is_control_character(char) or unicodedata.category(char) == "Cs":
        code = ord(char)
        return _ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return char


def one_line(text: str) -> str:
    """A value shown inside a line (a thread or turn id from Codex): escaped."""
    return "".join(escaped(c) for c in text)


def _columns(shown: str) -> int:
    width = 0
    for char in shown:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def free_text(text: str, indent: str, locale: str) -> list[str]:
    """Free text as a block of lines, each `indent + "| " + ...` (see the module
    header): line breaks start a new prefixed line, a line wider than WRAP_COLUMNS
    continues on the next, control characters are escaped. At most FREE_TEXT_LINES
    lines and FREE_TEXT_CHARS characters; the rest is counted in a last line
    "(N more characters, not shown)" (the request's details carry the whole text)."""
    text = text.replace("\r\n", "\n")
    out: list[str] = []
    current: list[str] = []
    width = 0
    stop = len(text)

    def flush() -> None:
        nonlocal current, width
        body = "".join(current)
        out.append(f"{indent}| {body}" if body else f"{indent}|")
        current, width = [], 0

    for pos, char in enumerate(text):
        if pos >= FREE_TEXT_CHARS:
            stop = pos
            break
        if char == "\n":
            flush()
            if len(out) == FREE_TEXT_LINES:
                stop = pos + 1
                break
            continue
        shown = escaped(char)
        columns = _columns(shown)
        if current and width + columns > WRAP_COLUMNS:
            flush()
            if len(out) == FREE_TEXT_LINES:
                stop = pos
                break
        current.append(shown)
        width += columns
    if current or not out:
        flush()
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
) -> tuple[ConfirmRequest, ConfirmRequest]:
    """The plan, then the launch: what `dots_start` asks before anything exists."""

    def r(key: str, **kw: Any) -> str:
        return say(locale, key, **kw)

    body = proposal_to_json(plan)
    lines = [r("dots.confirm.goal"), *free_text(plan.goal, "  ", locale)]
    lines += [r("dots.confirm.plan"), *free_text(plan.plan, "  ", locale)]
    lines.append(r("dots.confirm.workers"))
    for w in plan.workers:
        after = r("dots.confirm.after", deps=", ".join(w.depends_on)) if w.depends_on else ""
        lines.append(r("dots.confirm.worker_role", name=w.name, backend=w.backend, after=after))
        lines += [r("dots.confirm.role_label"), *free_text(w.role, "      ", locale)]
        lines += [r("dots.confirm.instruction_label"), *free_text(w.instruction, "      ", locale)]
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
                name=w.name,
                cwd=w.cwd,
                sandbox=w.sandbox,
                model=w.model or r("dots.confirm.default_model"),
                effort=w.effort or r("dots.confirm.default_effort"),
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
            launch.append(r("dots.confirm.takeover", thread=w.existing_thread_id))
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
            models=str(models) if models else r("dots.confirm.models_none"),
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
