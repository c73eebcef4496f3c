# Owns: the declaration of the fifteen marker tools of `tools serve` (TOL-1): each
# tool's name (the canonical kind with `_` for `-`, `markertools.TOOL_NAMES`), its input
# schema (the kind's body schema from the one kind table, `markertools.body_schema`, the
# same JSON Schema `markertools schema` prints) and its description (the kind's section
# of the guide, `markertools.render_guide`, in the server's locale, without the block
# example, plus one line saying the answer comes back in the same call and, where the
# guide offers "@NAME" references, that calls name tasks by id).
#
# Must never: declare an alias of a kind as a tool, or a schema other than the kind's.
from __future__ import annotations

import functools
from typing import Any, Final

import markertools
from markertools import msg

TOOL_NAMES: Final[tuple[str, ...]] = tuple(markertools.TOOL_NAMES)
# tools that change the world (every other one only reads; task_poll and wait_threads
# may wait)
CHANGING: Final[frozenset[str]] = frozenset(
    {
        "task_create",
        "todo_create",
        "todo_update",
        "automation_create",
        "task_cancel",
        "task_retry",
        "approval_answer",
        "goal_convert",
    }
)
WAITING: Final[frozenset[str]] = frozenset({"task_poll", "wait_threads"})


def kind_of(tool: str) -> str:
    """The canonical kind of a tool name (`task_create` -> `task-create`)."""
    return tool.replace("_", "-")


@functools.cache
def input_schema(tool: str) -> dict[str, Any]:
    """The tool's input schema: the kind's body schema (a fresh dict each caller may keep)."""
    schema = dict(markertools.body_schema(kind_of(tool)))
    schema.pop("$schema", None)  # MCP hosts read the 2020-12 dialect by default
    return schema


@functools.cache
def description(tool: str, locale: str = "en") -> str:
    """The kind's section of the guide (heading, cap, fields), without its block example."""
    guide = markertools.render_guide(locale, [kind_of(tool)])
    head, sep, section = guide.partition("\n## ")
    text = section if sep else head
    for marker in ("\nExample:", "\n示例："):
        text = text.split(marker, 1)[0]
    text = text.strip() + "\n\n" + msg("toolserver.same_call").render(locale)
    if "@NAME" in text:  # TOL-2: a call is a one-block turn, so it names tasks by id
        text += "\n" + msg("toolserver.ids_not_names").render(locale)
    return text
