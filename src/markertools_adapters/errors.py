# Owns: the root of every exception markertools_adapters raises on purpose
# (`MarkertoolsError`) and the family bases several modules share (`StoreError`,
# `StoreUnavailable`, `CodexError`), after httpx's `_exceptions.py`: one place that shows
# the whole tree, so a worker can catch all of the library's errors, or one family.
#
# Must never: import another module of markertools_adapters (every adapter imports this
# one; the leaves live with the code that raises them and only name their family here);
# give a class behaviour (a family base adds no attribute and no __init__, so adding it
# to an existing exception changes nothing but isinstance).
#
# Invariants:
#   Rule 1: every exception class defined under src/markertools_adapters derives from
#           MarkertoolsError, except the private ones of ALLOWED_OUTSIDE_THE_ROOT
#           (tests/adapters/test_errors.py walks the modules and checks it).
#   Rule 2: re-parenting keeps the old bases (RequestTimeout is still a TimeoutError,
#           MissingExtra still an ImportError, WorldFileError still a ValueError), so
#           the `except` clauses written against them keep catching the same errors.
"""The exception tree of `markertools_adapters` (docs/errors.md).

Catch `MarkertoolsError` for everything the adapters raise on purpose, or one family.
Every class keeps the standard base it had before the tree existed (shown after `|`),
so `except TimeoutError` or `except ValueError` still catches what it caught::

    MarkertoolsError                       root (an Exception)
    ├── StoreError                         a task store (SQLite, PostgreSQL) cannot serve
    │   ├── SchemaError                    _sql (re-exported by sqlite, postgres): the
    │   │   │                              database's schema cannot be used by this version
    │   │   └── SchemaTooNew               written by a newer markertools
    │   ├── StoreUnavailable               the database driver failed operationally
    │   └── UnknownTask                    | LookupError: a write names a task the store lacks
    ├── PlanStoreError                     planstore: the orchestration run journal
    │   ├── RunExists
    │   ├── RunNotFound
    │   ├── StaleRevision
    │   ├── CorruptStore
    │   ├── StateDirUnwritable             a write to the state directory failed (`undone`)
    │   └── HostLockHeld
    ├── DotsError                          dots: a refused supervisor call (`field`, `message`)
    │   ├── RunNotFound                    dots.RunNotFound (not planstore's)
    │   ├── ProposalInvalid
    │   ├── NotConfirmed
    │   ├── ConfirmationUnavailable        dots.mcp
    │   └── InputNeeded                    dots.mcp
    ├── CodexError                         codex: the app-server and its files
    │   ├── AppServerError                 a JSON-RPC error answer (`code`, `message`)
    │   ├── AppServerExited                the child exited with a request pending
    │   ├── RequestTimeout                 | TimeoutError: no answer in time
    │   └── CodexInputError                an events / rollout file cannot be read
    ├── ClaudeError                        claude: the Claude Code CLI child and its control protocol
    │   ├── ClaudeExited                   the child exited with a request pending
    │   ├── ControlTimeout                 | TimeoutError: no answer to a control request in time
    │   └── ControlRefused                 the CLI answered a control request with an error
    ├── WorldFileError                     | ValueError   world: an invalid world file
    │   └── MergeConflict                  world: records with the same key differ
    ├── MissingExtra                       | ImportError  stores: an optional extra is missing
    ├── ExecutorUnavailable                | RuntimeError executors: no backend for a kind
    ├── PermissionLookupTimeout            | TimeoutError permissions: the lookup did not answer
    ├── PermissionLookupError              | RuntimeError permissions: it answered a non-bool
    ├── NotLoopback                        | ValueError   tools: `--http` names no loopback address
    ├── OutageTooLong                      a store stayed unavailable past --store-outage-seconds
    ├── UsageFailure                       cli: a usage error or unreadable input (exit 2)
    └── NotResumable                       cli: `dots run --resume` names no unfinished run

The core (`markertools`) raises few exceptions, all standard ones: `ValueError` for a
value it refuses (`deliver_turn`, TRN-10; `UnknownKindError`, `NotJson`,
`ScheduleError`) and `AutomationNameTaken`, which a store raises through the
`AutomationStore` port. They are not under this root: the core imports no adapter.
"""

from __future__ import annotations

from typing import Final

import markertools

# FLT-8: the root is the core's (`markertools.MarkertoolsError`), so one `except` catches
# what the core and the adapters raise; it is re-exported here for the older import path.
MarkertoolsError = markertools.MarkertoolsError


class StoreError(MarkertoolsError):
    """A task store (SQLite, PostgreSQL) cannot do what was asked. Raised itself for a
    driver error that is not operational (a constraint, a closed connection, ...), with
    the driver's exception as `__cause__` (TRN-8)."""


class StoreUnavailable(StoreError):
    """The database driver failed in a way a retry can cure (FLT-8): the server is down,
    restarting or cut off, the pool timed out, the database is locked, a disk I/O error -
    with the driver's exception as `__cause__` and its class and text as the message.
    Retrying later may succeed (the long-running commands do, FLT-3). A database or role
    that does not exist, refused credentials, a bad URL, a missing table are a plain
    StoreError: no retry cures them (TRN-8)."""


class UnknownTask(StoreError, LookupError):
    """A write names a task the store does not hold (`record_cost`, `finish_turn`):
    refused, nothing written. `task_id` is the id asked for."""

    def __init__(self, task_id: str, what: str) -> None:
        self.task_id = task_id
        super().__init__(f"{what}: no task {task_id!r} in this store (nothing was written)")


class CodexError(MarkertoolsError):
    """The Codex adapter: the app-server child, its JSON-RPC answers, its files."""


class ClaudeError(MarkertoolsError):
    """The Claude Code adapter: the `claude` child and its control protocol."""


# Rule 1: the exception classes that stay outside the tree, each private to one module
# (raised and caught there, never seen by a caller).
ALLOWED_OUTSIDE_THE_ROOT: Final[frozenset[str]] = frozenset(
    {
        "markertools_adapters.world._Bad",
        "markertools_adapters.codex._appserver._Shape",
        "markertools_adapters.codex._rollout._Shape",
        "markertools_adapters.codex._files._CorruptInput",
        "markertools_adapters.worktrees._Refusal",
        "markertools_adapters.worker.run._Ended",  # control flow inside one TaskRun
    }
)

__all__ = [
    "ClaudeError",
    "CodexError",
    "MarkertoolsError",
    "StoreError",
    "StoreUnavailable",
    "UnknownTask",
]
