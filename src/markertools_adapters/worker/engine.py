# Owns: the engine port of the worker host (ENG-1, ENG-2): what a coding agent must offer
# for the host to run a task on it - `Engine` (start its process in the task's directory,
# open or resume a session, run a turn with an input, interrupt, kill its process group,
# read a previous process's last completed turn, close) - and the values it reports to the
# run through `EngineEvents`: `TurnEnd` (a turn's status, its text, its cost) and
# `EngineRequest` (an approval the agent asks for, engine-neutral). `TaskTools` is how a
# session reaches the task's markertools tools without a secret the agent can read
# (TOL-10): a loopback URL with a bearer sent in memory, or calls answered in-process.
#
# The host, leases, delivery, approvals and views use only these names; `codex_engine`
# and `claude_engine` are the adapters.
#
# Must never: hold store state (the run does); decide an approval itself (the run asks the
# broker or declines).
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from markertools import TurnCost

ENGINES: Final[tuple[str, ...]] = ("codex", "claude-code")
TOOLS_SERVER: Final[str] = "markertools"  # the MCP server name the tools appear under


@dataclass(frozen=True)
class TurnEnd:
    """How one turn ended: `status` completed / failed / interrupted; `text` every agent
    message of the turn (what is delivered); `reply` the final one (the task's result);
    `cost` its tokens and dollars; `error` the engine's detail of a failed turn."""

    turn_id: str
    status: str
    text: str
    reply: str | None
    cost: TurnCost
    error: str | None = None


@dataclass(frozen=True)
class Verdict:
    """The run's answer to an EngineRequest: `approved`, and `message`, what the agent is
    told with a decline (why; None: the engine's plain refusal). `interrupt`: the run
    ends the turn too (WRK-3's decline), so the engine need not tell the agent."""

    approved: bool
    message: str | None = None
    interrupt: bool = False


@dataclass(frozen=True)
class EngineRequest:
    """An approval the agent asks for (APR-1), engine-neutral: `kind` command /
    file_change / permission / input; the command as the agent wrote it and its argv
    when it parses as one; the paths a file change touches; the agent's reason; `name`
    how the engine calls it ("command approval"), `summary` one line for messages."""

    kind: str
    name: str
    summary: str
    command: str | None = None
    argv: tuple[str, ...] | None = None
    cwd: str | None = None
    paths: tuple[str, ...] = ()
    diff: str | None = None
    reason: str | None = None
    # APR-1: whether the engine can carry out an approval of it (False: it only ever
    # refuses, e.g. Codex's extra-permission grants, so the run declines at once)
    brokered: bool = True


class EngineEvents(Protocol):
    """What an engine tells its run (always on the event loop)."""

    def turn_ended(self, end: TurnEnd) -> None: ...

    def exited(self, detail: str) -> None: ...

    def tools_ready(self, status: str) -> None: ...

    async def approve(self, request: EngineRequest) -> Verdict:
        """The run's answer (APR-1): approved or declined, and what the agent is told."""
        ...


@dataclass
class TaskTools:
    """TOL-10: the task's markertools tools as an engine reaches them, served by the host:
    `url` and `bearer` when the host serves them over Streamable HTTP on loopback (Codex
    gets them in the thread's configuration, over the app-server's stdin: never a file
    or an environment variable); `call` answers a tool call in the host's own process
    (an engine that serves tools in-process, e.g. Claude Code's SDK MCP server); `names`,
    `schema` and `description` declare them."""

    names: tuple[str, ...] = ()
    url: str | None = None
    bearer: str | None = field(default=None, repr=False)
    call: Callable[[str, Any, str | None], Awaitable[Any]] | None = None
    schema: Callable[[str], dict[str, Any]] | None = None
    description: Callable[[str], str] | None = None


class Engine(Protocol):
    """One task's coding agent: its process (own process group) and its session."""

    name: str

    @property
    def pgid(self) -> int | None:
        """The process group of the agent's process, once started."""
        ...

    @property
    def alive(self) -> bool: ...

    @property
    def model(self) -> str | None:
        """The model the session runs (for pricing), once known."""
        ...

    async def start(self) -> int | None:
        """Start the agent's process (idempotent); its process group."""
        ...

    async def open(self, *, resume: str | None) -> str | None:
        """The session: started, or resumed (`resume` = its id). None when that session
        cannot be resumed (gone); raises for any other failure. Waits for the task's
        tools to be ready (or failed, or a bound) before returning."""
        ...

    async def last_turn(self, session: str) -> tuple[str, str] | None:
        """(turn id, text) of the last turn of `session` when it completed - a turn a
        killed host never delivered (WRK-6) - or None."""
        ...

    async def start_turn(self, text: str) -> str:
        """Send one user input; the turn id. Its end arrives as `turn_ended`."""
        ...

    def cost_so_far(self, turn_id: str) -> TurnCost:
        """What a turn that never reported its end (cancelled, cut) cost so far."""
        ...

    async def turn_over(self, timeout: float) -> bool:
        """Wait for the live turn to end; False after `timeout` with it still live."""
        ...

    async def interrupt(self) -> None:
        """Ask the live turn to stop (best effort)."""
        ...

    def kill(self) -> None:
        """SIGKILL the whole process group (cancel, lost lease)."""
        ...

    async def close(self, grace: float) -> None:
        """End the process (gracefully within `grace`, then by force)."""
        ...


__all__ = [
    "ENGINES",
    "TOOLS_SERVER",
    "Engine",
    "EngineEvents",
    "EngineRequest",
    "TaskTools",
    "TurnEnd",
    "Verdict",
]
