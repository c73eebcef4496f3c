# Owns: `TaskChange`, the typed change record of a task transition
# (`TaskStore.transition_task`): every changeable Task field, each optional, with `KEEP`
# ("leave as is") as its default; and `TaskChange.of`, the ONE conversion every bundled
# store applies to what it is given (a TaskChange, or a field -> value mapping from an
# older caller). Pure: builds values, never touches a store.
#
# Must never: accept a field name that is not a changeable Task field (a typo must fail
# at once, with its name, before any store runs a statement), or coerce a value (the
# stores check statuses and types when they write).
#
# Invariants:
#   Rule 1: the fields are exactly the Task fields but `id` (which never changes), in the
#           Task's order (checked at import).
#   Rule 2: `TaskChange.of(m)` raises ValueError naming every unknown field of `m` (and
#           the nearest field name), the same text whichever store calls it.
#   Rule 3: a TaskChange is also a read-only Mapping of the fields it sets (KEEP fields
#           are absent), so a store written against `Mapping[str, object]` takes it as is.
from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from markertools._root import InvalidArgument, InvalidType
from markertools.domain.model import Task


class Keep(enum.Enum):
    """The type of `KEEP`, the value of a TaskChange field that changes nothing."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


@attrs.frozen(repr=False)
class TaskChange(Mapping[str, object]):
    """What a transition changes on a task: every field left at `KEEP` stays as it is;
    any other value (None included: it clears the field) is written.

    `TaskChange(status="queued", result_text=None)` is the change; a store receives it
    through `TaskStore.transition_task`, which also accepts a field -> value mapping and
    converts it with `TaskChange.of` (an unknown field is a ValueError naming it).
    `to_mapping()` gives the fields it sets as a dict; the change itself is a read-only
    mapping of the same fields."""

    project_id: str | Keep = KEEP
    status: str | Keep = KEEP
    created_by: str | Keep | None = KEEP
    parent_task_id: str | Keep | None = KEEP
    executor: str | Keep = KEEP
    environment_id: str | Keep | None = KEEP
    model: str | Keep | None = KEEP
    effort: str | Keep | None = KEEP
    goal_mode: bool | Keep = KEEP
    verify_command: str | Keep | None = KEEP
    is_coordinator: bool | Keep = KEEP
    coordinator_part: str | Keep | None = KEEP
    prompt: str | Keep = KEEP
    result_text: str | Keep | None = KEEP
    error_text: str | Keep | None = KEEP
    actual_model: str | Keep | None = KEEP
    worktree: str | Keep | None = KEEP
    host: str | Keep | None = KEEP
    created_at: float | Keep = KEEP
    goal: str | Keep | None = KEEP
    interrupted_reason: str | Keep | None = KEEP
    auto_resume_count: int | Keep = KEEP
    repo_url: str | Keep | None = KEEP
    retried_after_attempt: int | Keep | None = KEEP
    turn: int | Keep = KEEP
    thread_id: str | Keep | None = KEEP

    @classmethod
    def of(cls, changes: TaskChange | Mapping[str, object]) -> TaskChange:
        """`changes` as a TaskChange (a TaskChange is returned as is). Rule 2: a mapping
        naming a field a transition cannot change raises ValueError naming it; anything
        but a mapping raises TypeError."""
        if isinstance(changes, TaskChange):
            return changes
        if not isinstance(changes, Mapping):
            raise InvalidType(
                "task changes must be a TaskChange or a mapping of task field names to "
                f"values; got {type(changes).__name__}"
            )
        unknown = [name for name in changes if name not in CHANGEABLE_TASK_FIELDS]
        if unknown:
            raise InvalidArgument(_unknown_fields(unknown))
        values: dict[str, Any] = dict(changes)
        return cls(**values)

    def to_mapping(self) -> dict[str, object]:
        """The fields this change sets, name -> value, in the Task's field order."""
        return {name: value for name in _FIELDS if (value := getattr(self, name)) is not KEEP}

    # ---- Rule 3: a read-only mapping of the fields it sets ------------------------------

    def __getitem__(self, name: str) -> object:
        value = getattr(self, name, KEEP) if name in CHANGEABLE_TASK_FIELDS else KEEP
        if value is KEEP:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_mapping())

    def __len__(self) -> int:
        return len(self.to_mapping())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.to_mapping().items())
        return f"TaskChange({fields})"


_FIELDS: Final[tuple[str, ...]] = tuple(f.name for f in attrs.fields(TaskChange))
# a task's id never changes; its epoch (FLT-1) is raised by claims only, in the store;
# its engine (ENG-1) is chosen when the task is made
_NOT_CHANGEABLE: Final[frozenset[str]] = frozenset({"id", "epoch", "engine"})
CHANGEABLE_TASK_FIELDS: Final[frozenset[str]] = frozenset(_FIELDS)


def _unknown_fields(unknown: Sequence[object]) -> str:
    """Rule 2: one line naming the unknown fields, the nearest real one for a typo, and
    every field a transition may change."""
    from difflib import get_close_matches  # only on this error path

    named = []
    for name in unknown:
        near = get_close_matches(name, _FIELDS, n=1) if isinstance(name, str) else []
        if name == "id":
            named.append("'id' (a task's id never changes)")
        elif name == "epoch":
            named.append("'epoch' (only a claim raises it, FLT-1)")
        elif name == "engine":
            named.append("'engine' (chosen when the task is made, ENG-1)")
        else:
            named.append(f"{name!r} (did you mean {near[0]!r}?)" if near else repr(name))
    return (
        f"a task change names unknown field(s) {', '.join(named)}; a transition may change "
        f"only {', '.join(_FIELDS)}"
    )


def _check_fields() -> None:
    """Rule 1, once at import: a Task field added without its TaskChange field fails."""
    task_fields = tuple(f.name for f in attrs.fields(Task) if f.name not in _NOT_CHANGEABLE)
    if task_fields != _FIELDS:
        raise RuntimeError(f"TaskChange fields {_FIELDS} differ from the Task's {task_fields}")


_check_fields()
