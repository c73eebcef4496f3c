# Owns: first-turn prompt assembly (docs/rules.md INJ): from the records a caller fetched (task,
# project, open todos, memory snippets, latest attempt) build the prompt - and for goal
# tasks the goal - a freshly claimed task is given. Pure: the caller gathers the inputs
# (see markertools_adapters.first_turn) and keeps the result in memory only.
#
# Invariants:
#   Rule 1 (INJ-1, INJ-1): only fresh starts ("fresh", "retry", "resume") get anything;
#           continuation, checkpoint and manual starts get the prompt unchanged. The start
#           is a `StartKind`: any other value raises ValueError naming the allowed ones
#           (when `InjectionInputs` is built), so a typo never silently drops an injection.
#   Rule 2 (INJ-2): sections appear in the order project, todos, memory, resume preamble,
#           then the original prompt, verbatim.
#   Rule 3 (INJ-3/4/5): coordinators get nothing; goal tasks get only the project context,
#           which is also prepended to the goal; a failed or empty lookup (LookupFailed /
#           None) drops its section and nothing else.
#   Rule 4 (INJ-7): todo titles (written by tasks), memory snippets (usually written by a
#           model) and previous attempt output appear only inside data framing; one-line
#           fields are flattened so they cannot start lines; each injected section (not
#           the original prompt) is also checked with `render.inert`, so none holds a
#           marker block. Only a caller that vouches for its snippets
#           (`InjectionInputs.memory_trusted`) gets them pasted verbatim, unchecked.
#   Rule 5: nothing is written back: inputs are never mutated; the result is a new value.
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

import attrs

from markertools._root import InvalidArgument
from markertools.domain.approvals import ApprovalRequest
from markertools.domain.model import (
    UNFINISHED_TODO_STATUSES,
    Attempt,
    Project,
    StartKind,
    Task,
    Todo,
    is_goal_task,
    start_kind_of,
)
from markertools.domain.ports import RandomSource, TodoListing
from markertools.inject.attempts import (
    one_line,
    preamble_applies,
    recovered_section,
    resume_preamble,
)
from markertools.inject.framing import frame_data
from markertools.inject.inert import inert
from markertools.text.msg import Msg, msg

START_KINDS: Final[tuple[str, ...]] = tuple(k.value for k in StartKind)
# "fresh": the first claim (or, as before StartKind, a platform restart: the ledger
# decides whether a resume preamble applies); "resume": the claim after a platform
# restart (the ledger's row gives the preamble); "retry": the claim after a task-retry or
# another manual retry (fresh, but manual retries carry no preamble, ATT-2/ATT-4).
FRESH_STARTS: Final[frozenset[str]] = frozenset(
    {StartKind.FRESH, StartKind.RETRY, StartKind.RESUME}
)
INJECTED_TODOS: Final[int] = 20  # INJ-4
TODO_TITLE_CHARS: Final[int] = 100  # INJ-4
FIELD_CHARS: Final[int] = 200  # project / repository / environment values, one line each
SECTION_SEP: Final[str] = "\n\n"


@attrs.frozen
class LookupFailed:
    """A lookup that raised: its section is left out (INJ-3/4), never an error."""

    error: str = ""


@attrs.frozen
class InjectionInputs:
    """What the caller fetched for one claim. `project` None = no such project (empty
    lookup); `todos` None = not fetched (e.g. goal tasks); `attempt` = latest_attempt."""

    task: Task
    start: StartKind = attrs.field(default=StartKind.FRESH, converter=start_kind_of)
    project: Project | LookupFailed | None = None
    todos: TodoListing | LookupFailed | None = None
    memory: tuple[str, ...] = ()
    attempt: Attempt | None = None
    memory_trusted: bool = False  # the caller vouches for `memory`: pasted verbatim
    # FLT-2: the report messages of turns the platform finished delivering for the
    # previous attempt after it was cut off (`recover_pending_turns`), oldest first
    recovered: tuple[str, ...] = ()
    # APR-5: the task's approval requests that the requeue ending the previous attempt
    # expired unanswered (`unanswered_at_requeue`); the resume preamble names them
    unanswered: tuple[ApprovalRequest, ...] = ()


@attrs.frozen
class FirstTurnPrompt:
    """The assembled texts. `sections` names what was added, in order; `notes` says, for
    inspection (the `prompt` CLI), why a section is absent."""

    prompt: str
    goal: str | None
    sections: tuple[str, ...] = ()
    notes: tuple[Msg, ...] = ()


def _field(value: str | None) -> str | Msg:
    if value is None or not value.strip():
        return msg("common.none")
    return one_line(value, FIELD_CHARS)


def project_section(project: Project, locale: str = "en") -> str:
    """INJ-3: name, repository (or "not bound"), environment (or "none"), a task-list example."""
    name: str | Msg = (
        one_line(project.name, FIELD_CHARS) if project.name.strip() else msg("inject.unnamed")
    )
    repo: str | Msg = (
        one_line(project.repo_url, FIELD_CHARS)
        if project.repo_url and project.repo_url.strip()
        else msg("inject.repo_unbound")
    )
    env = project.environment
    environment: Msg
    if env is None or all(
        v is None or not str(v).strip() for v in (env.name, env.branch, env.status)
    ):
        environment = msg("common.none")
    else:
        environment = msg(
            "inject.environment",
            name=_field(env.name),
            branch=_field(env.branch),
            status=_field(env.status),
        )
    example = json.dumps({"status": "failed", "limit": 20})
    lines = [
        msg("inject.project_header"),
        msg("inject.project_line", name=name, id=one_line(project.id, FIELD_CHARS)),
        msg("inject.repo_line", repo=repo),
        msg("inject.environment_line", environment=environment),
        msg("inject.task_list_example", example=example),
    ]
    return "\n".join(line.render(locale) for line in lines)


def _todo_line(todo: Todo) -> str:
    title = one_line(todo.title, 10 * TODO_TITLE_CHARS)
    shown = title if len(title) <= TODO_TITLE_CHARS else title[:TODO_TITLE_CHARS] + "…"
    return f"- {one_line(todo.id, FIELD_CHARS)} [{todo.status}, {todo.priority}] {shown}"


def todos_section(listing: TodoListing, random: RandomSource, locale: str = "en") -> str | None:
    """INJ-4: at most 20 unfinished todos (titles cut to 100 code points) inside data
    framing, then three todo-update example lines; None when there is no open todo."""
    rows = [t for t in listing.rows if t.status in UNFINISHED_TODO_STATUSES]
    shown = rows[:INJECTED_TODOS]
    if not shown:
        return None
    total = max(listing.total, len(rows))
    more = total - len(shown)
    header = (
        msg("inject.todos_header_more", shown=len(shown), total=total, more=more)
        if more > 0
        else msg("inject.todos_header", shown=len(shown))
    )
    data = "\n".join(_todo_line(t) for t in shown)
    framed = frame_data(data, msg("inject.todos_label"), random, locale).text
    example_id = shown[0].id
    examples = [
        json.dumps({"id": example_id, "status": "in_progress"}, ensure_ascii=False),
        json.dumps({"id": example_id, "status": "completed"}, ensure_ascii=False),
        json.dumps({"id": example_id, "status": "blocked", "priority": "high"}, ensure_ascii=False),
    ]
    return "\n".join(
        [header.render(locale), framed, msg("inject.todos_examples").render(locale), *examples]
    )


def memory_section(
    snippets: Sequence[str],
    locale: str = "en",
    *,
    random: RandomSource | None = None,
    trusted: bool = False,
) -> str | None:
    """Caller-supplied memory snippets under a header; None when there are none.

    By default (INJ-7) the snippets, separated by blank lines, are framed as data with a
    nonce from `random` - agent memories are usually written by a model. With
    `trusted=True` (the caller vouches for every snippet) they are pasted verbatim.

    Raises:
        ValueError: untrusted snippets without a `random` source to frame them with.
    """
    kept = [s.strip("\n") for s in snippets if isinstance(s, str) and s.strip()]
    if not kept:
        return None
    header = msg("inject.memory_header")
    joined = SECTION_SEP.join(kept)
    if trusted:
        return header.render(locale) + "\n" + joined
    if random is None:
        raise InvalidArgument("untrusted memory snippets need a random source to be framed (INJ-7)")
    return header.render(locale) + "\n" + frame_data(joined, header, random, locale).text


def _prepend(sections: Sequence[str], original: str) -> str:
    return SECTION_SEP.join([*sections, original]) if original else SECTION_SEP.join(sections)


def assemble_first_turn(
    inputs: InjectionInputs, random: RandomSource, locale: str = "en"
) -> FirstTurnPrompt:
    """INJ-1..5 (+INJ-7): the first-turn prompt (and goal) for `inputs.task`. The start
    was checked when `inputs` was built (INJ-1: an unknown one raised ValueError)."""
    task = inputs.task
    unchanged_goal = task.goal
    if inputs.start not in FRESH_STARTS:
        note = msg("inject.note_not_fresh", start=inputs.start)
        return FirstTurnPrompt(task.prompt, unchanged_goal, (), (note,))
    if task.is_coordinator:
        return FirstTurnPrompt(task.prompt, unchanged_goal, (), (msg("inject.note_coordinator"),))
    goal_task = is_goal_task(task)
    names: list[str] = []
    texts: list[str] = []
    notes: list[Msg] = []

    project_text: str | None = None
    if isinstance(inputs.project, LookupFailed):
        notes.append(msg("inject.note_project_failed", error=inputs.project.error or "?"))
    elif inputs.project is None:
        notes.append(msg("inject.note_project_missing", project=task.project_id))
    else:
        project_text = inert(project_section(inputs.project, locale))
        names.append("project")
        texts.append(project_text)

    if goal_task:
        notes.append(msg("inject.note_goal_only_project"))
    elif isinstance(inputs.todos, LookupFailed):
        notes.append(msg("inject.note_todos_failed", error=inputs.todos.error or "?"))
    elif inputs.todos is not None:
        todo_text = todos_section(inputs.todos, random, locale)
        todo_text = inert(todo_text) if todo_text is not None else None
        if todo_text is None:
            notes.append(msg("inject.note_no_todos"))
        else:
            names.append("todos")
            texts.append(todo_text)

    memory_text = memory_section(
        inputs.memory, locale, random=random, trusted=inputs.memory_trusted
    )
    if memory_text is not None and not inputs.memory_trusted:
        memory_text = inert(memory_text)
    if memory_text is not None:
        names.append("memory")
        texts.append(memory_text)

    if not goal_task:
        if inputs.start == StartKind.RETRY:
            notes.append(msg("inject.note_retry_no_preamble"))
        preamble = None
        if inputs.start != StartKind.RETRY and preamble_applies(inputs.attempt, task):
            preamble = resume_preamble(
                inputs.attempt, random, locale, inputs.recovered, inputs.unanswered
            )
            preamble = inert(preamble) if preamble is not None else None
            if preamble is not None:
                names.append("resume")
                texts.append(preamble)
        elif inputs.start == StartKind.RESUME:
            notes.append(msg("inject.note_resume_no_attempt"))
        if preamble is None and inputs.recovered:  # FLT-2: said even without a preamble
            names.append("recovered")
            texts.append(inert(recovered_section(inputs.recovered, random, locale)))

    prompt = _prepend(texts, task.prompt) if texts else task.prompt
    goal = unchanged_goal
    if goal_task and project_text is not None and unchanged_goal is not None:
        goal = _prepend([project_text], unchanged_goal)
    return FirstTurnPrompt(prompt, goal, tuple(names), tuple(notes))
