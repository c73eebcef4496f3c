# Owns: `WorkerSettings`, everything one worker host is told (WRK-1): the project, its
# host name, how many tasks at once, the Codex binary and its environment, the worktree
# root, lease and grace times, the price table and the goal-round limit; and
# `PriceTable`, USD per million tokens by model, read from a JSON file (WRK-8).
#
# Must never: price a model the table does not name (its tokens stay unpriced, never $0).
from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Final

from markertools import InvalidArgument, TurnCost

MAX_CONCURRENT_RANGE: Final[tuple[int, int]] = (1, 16)
ENGINE_NAMES: Final[tuple[str, ...]] = ("codex", "claude-code")  # ENG-1
APPROVAL_MODES: Final[tuple[str, ...]] = ("broker", "decline")  # APR-1 / WRK-3
_PRICE_KEYS: Final[tuple[str, ...]] = ("input", "cached_input", "output")
_MILLION: Final[Decimal] = Decimal(1_000_000)
# A cost row's `priced_by` (issue 39): dollars from Claude Code's result message, or from
# the host's price table (`--prices`)
PRICED_BY_CLAUDE_CODE: Final[str] = "claude-code"
PRICED_BY_TABLE: Final[str] = "table"


def default_host() -> str:
    """The machine's host name (the default `--host`)."""
    return socket.gethostname() or "worker"


def machine_id() -> str:
    """This machine: /etc/machine-id, else the host name (WRK-6 compares it before ending
    a dead host's process group)."""
    try:
        text = Path("/etc/machine-id").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        text = ""
    return text or default_host()


# TOL-10: variables an agent's environment never inherits from its host: a task token,
# and what opens a store (database URLs, PostgreSQL's password and service files)
SECRET_ENV: Final[frozenset[str]] = frozenset(
    {
        "MARKERTOOLS_TASK_TOKEN",
        "MARKERTOOLS_DB",
        "MARKERTOOLS_PG_DSN",
        "DATABASE_URL",
        "PGPASSWORD",
        "PGPASSFILE",
        "PGSERVICEFILE",
    }
)


def secret_variable(name: str, value: str, store_url: str | None) -> bool:
    """TOL-10: whether an environment variable must stay out of an agent's process."""
    if name in SECRET_ENV:
        return True
    return bool(store_url) and store_url is not None and len(store_url) > 3 and store_url in value


@dataclass(frozen=True)
class TokenUsage:
    """One turn's tokens, from Codex `thread/tokenUsage/updated` (`last`)."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    total: int = 0


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens by model: `{"gpt-5": {"input": 1.25, "cached_input":
    0.125, "output": 10}}` (a missing `cached_input` is priced as `input`)."""

    models: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | str) -> PriceTable:
        """Read a price file; ValueError naming what is wrong."""
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidArgument(f"price file {str(path)!r}: {exc}") from None
        return cls.from_json(raw, str(path))

    @classmethod
    def from_json(cls, raw: object, label: str = "prices") -> PriceTable:
        if not isinstance(raw, dict):
            raise InvalidArgument(f"{label}: expected an object of models")
        models: dict[str, dict[str, Decimal]] = {}
        for model, prices in raw.items():
            if not isinstance(prices, dict):
                raise InvalidArgument(f"{label}: {model}: expected an object of prices")
            row: dict[str, Decimal] = {}
            for key, value in prices.items():
                if key not in _PRICE_KEYS:
                    raise InvalidArgument(f"{label}: {model}: unknown price {key!r}")
                try:
                    amount = Decimal(str(value))
                except InvalidOperation:
                    raise InvalidArgument(f"{label}: {model}.{key}: not a number") from None
                if isinstance(value, bool) or not amount.is_finite() or amount < 0:
                    raise InvalidArgument(f"{label}: {model}.{key}: not a price")
                row[key] = amount
            if "input" not in row or "output" not in row:
                raise InvalidArgument(f"{label}: {model}: needs input and output prices")
            models[str(model)] = row
        return cls(models)

    def cost(self, model: str | None, usage: TokenUsage) -> TurnCost:
        """The turn's cost: priced when the table names the model (`priced_by` "table"),
        else unpriced."""
        prices = self.models.get(model or "")
        if prices is None:
            return TurnCost(None, usage.total, estimated=False, priced=False)
        uncached = max(usage.input - usage.cached_input, 0)
        usd = (
            uncached * prices["input"]
            + usage.cached_input * prices.get("cached_input", prices["input"])
            + usage.output * prices["output"]
        ) / _MILLION
        return TurnCost(usd.quantize(Decimal("0.000001")), usage.total, priced_by=PRICED_BY_TABLE)


@dataclass(frozen=True)
class WorkerSettings:
    """One host's settings (`markertools worker run` options, WRK-1)."""

    project: str
    host: str = field(default_factory=default_host)
    max_concurrent: int = 2
    codex_bin: str = "codex"
    codex_args: tuple[str, ...] = ("app-server",)
    codex_env: Mapping[str, str] | None = None  # None: this process's environment
    worktrees: Path = field(default_factory=lambda: Path.cwd() / "worktrees")
    lease_seconds: float = 60.0
    affinity_seconds: float = 300.0
    grace_seconds: float = 30.0
    poll_seconds: float = 0.5  # idle claim loop and cancel watch on SQLite
    prices: PriceTable = field(default_factory=PriceTable)
    max_goal_rounds: int = 20
    until_idle: bool = False
    locale: str = "en"
    request_timeout: float = 60.0
    machine: str = field(default_factory=machine_id)
    # WRK-9, TOL-10: give every task's agent the markertools tools, served by the host
    # itself (Codex: Streamable HTTP on 127.0.0.1, the run's token only in the thread's
    # configuration; Claude Code: in-process) - never a server process the agent can read
    tools: bool = False
    tools_ready_seconds: float = 30.0
    # FLT-3: how long a store outage is ridden out before the host exits 75
    store_outage_seconds: float = 300.0
    # FLT-5: tasks whose delivery waits hold no run slot; at most this many wait at once
    max_waiting: int = 32
    # FLT-5: a waiting task's app-server is stopped after waiting this long (None: kept);
    # its thread is resumed in a new one when the wait ends
    park_seconds: float | None = 5.0
    # ENG-1: the engine a task runs on unless the task names one ("codex", "claude-code")
    engine: str = "codex"
    # APR-1: "broker" - an agent's approval request becomes a stored request a rule, a
    # person or an ancestor agent answers (the turn waits, holding no run slot, at most
    # `approval_timeout` s; unanswered: declined, the agent told why); "decline" - WRK-3:
    # declined at once, the turn interrupted, the task ended `interrupted` naming it
    approvals: str = "broker"
    approval_timeout: float = 900.0
    claude_bin: str = "claude"  # the Claude Code CLI (ENG-1)
    # TOL-10: the store's URL (kept out of every agent's environment), if the host knows it
    store_url: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        low, high = MAX_CONCURRENT_RANGE
        if not low <= self.max_concurrent <= high:
            raise InvalidArgument(f"max_concurrent must be {low}-{high}, got {self.max_concurrent}")
        if self.lease_seconds <= 0:
            raise InvalidArgument("lease_seconds must be positive")
        if self.max_goal_rounds < 1:
            raise InvalidArgument("max_goal_rounds must be at least 1")
        if self.engine not in ENGINE_NAMES:
            raise InvalidArgument(
                f"engine must be one of {', '.join(ENGINE_NAMES)}, got {self.engine!r}"
            )
        if self.approvals not in APPROVAL_MODES:
            raise InvalidArgument(
                f"approvals must be one of {', '.join(APPROVAL_MODES)}, got {self.approvals!r}"
            )
        if not 0 < self.approval_timeout < float("inf"):
            raise InvalidArgument(
                f"approval_timeout must be a positive number of seconds, got {self.approval_timeout!r}"
            )
        if self.max_waiting < 0:
            raise InvalidArgument("max_waiting must be 0 or more")
        if self.store_outage_seconds < 0:
            raise InvalidArgument("store_outage_seconds must be 0 or more")

    def child_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a task's agent process (TOL-10): this process's (or
        `codex_env`), without anything that opens the store or acts as a task - the
        variables of SECRET_ENV and any value holding the store's URL (`store_url`) -
        then `extra` (what the route of the task's tools needs, if anything)."""
        base = os.environ if self.codex_env is None else self.codex_env
        env = {k: v for k, v in base.items() if not secret_variable(k, v, self.store_url)}
        env.update(extra or {})
        return env
