# Owns: the adapters' view of the one exception tree (FLT-8): the root
# (`MarkertoolsError`, defined in the core and re-exported here), the family bases several
# modules share (`StoreError`, `StoreUnavailable`, `BadDatabaseUrl`, `CodexError`) and the
# one allow-list of private exceptions, after httpx's `_exceptions.py`: one place that
# shows the whole tree, so a worker can catch all of the library's errors, or one family.
#
# Must never: import another module of markertools_adapters (every adapter imports this
# one; the leaves live with the code that raises them and only name their family here);
# give a class behaviour (a family base adds no attribute and no __init__, so adding it
# to an existing exception changes nothing but isinstance).
#
# Invariants:
#   Rule 1: every exception class defined under src/markertools and
#           src/markertools_adapters derives from MarkertoolsError, except the private
#           ones of ALLOWED_OUTSIDE_THE_ROOT (tests/adapters/test_errors.py walks the
#           modules of both packages and checks it).
#   Rule 2: re-parenting keeps the old bases (RequestTimeout is still a TimeoutError,
#           MissingExtra still an ImportError, WorldFileError, NotJson, BadDatabaseUrl
#           still a ValueError, NoExecutor a TypeError), so the `except` clauses written
#           against them keep catching the same errors.
"""The exception tree of markertools and `markertools_adapters` (docs/errors.md).

Catch `MarkertoolsError` (`markertools.MarkertoolsError`, the same class as
`markertools_adapters.MarkertoolsError`) for everything the library and its adapters
raise on purpose, or one family. Every class keeps the standard base it had before the
tree existed (shown after `|`), so `except TimeoutError` or `except ValueError` still
catches what it caught. Only `StoreUnavailable` is worth a retry::

    MarkertoolsError                       root (an Exception): markertools.MarkertoolsError
    ├── StoreError                         a task store (SQLite, PostgreSQL) cannot serve; no retry cures it
    │   ├── SchemaError                    _sql (re-exported by sqlite, postgres): the
    │   │   │                              database's schema cannot be used by this version
    │   │   └── SchemaTooNew               written by a newer markertools
    │   ├── StoreUnavailable               RETRYABLE: the database is away or busy now
    │   ├── UnknownTask                    | LookupError: a write names a task the store lacks
    │   ├── BadDatabaseUrl                 | ValueError   connect: not a URL form markertools opens
    │   ├── DatabaseNotFound               | FileNotFoundError  stores: must_exist, no such file
    │   ├── NotAMarkertoolsDatabase        | ValueError   stores: must_exist, not a markertools one
    │   └── DatabaseExists                 | FileExistsError  sqlite: a new database's path exists
    ├── NoExecutor                         | TypeError    wiring: connect / store_ports without executor
    ├── UnknownExecutor                    | ValueError   executors: not noop, local or docker
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
    ├── ListenFailed                       | OSError      tools: the `--http` address cannot be listened on
    ├── StoreDown                          tools: the store stayed away through a call's whole wait budget
    ├── OutageTooLong                      a store stayed unavailable past --store-outage-seconds
    ├── UsageFailure                       cli: a usage error or unreadable input (exit 2)
    ├── NotResumable                       cli: `dots run --resume` names no unfinished run
    ├── OperationFailed                    | RuntimeError an adapter's operation failed (docker, a pgid, a session)
    ├── BinaryNotFound                     | FileNotFoundError  offline: no pinned codex / claude binary
    ├── WorktreeFailed                     | OSError      worker: `git worktree add` failed
    │   the core (`markertools`, importable from it):
    ├── InvalidArgument                    | ValueError   an argument outside what a function documents
    ├── InvalidType                        | TypeError    an argument of a type the function does not take
    ├── LeaseLost                          a write's claim no longer holds its task (FLT-1)
    ├── TurnIdReused                       | ValueError   a turn id delivered again with other input (FLT-6)
    ├── TurnFinishedDifferently            | ValueError   a finished turn id with another outcome (FLT-6)
    ├── CallIdReused                       | ValueError   a tool call id with other arguments (FLT-6)
    ├── AutomationNameTaken                a store refused a taken automation name (AUT-3)
    ├── TaskTokenRefused                   | ValueError   no token for a task not running (TOL-3)
    ├── UnknownKindError                   | ValueError   render_guide: not a marker kind
    ├── NotJson                            | ValueError   markertools.plans: not a JSON document
    └── ScheduleError                      | ValueError   markertools.plans: inconsistent roles

An argument the core or an adapter refuses is an `InvalidArgument` (still a ValueError)
or an `InvalidType` (still a TypeError); `deliver_turn` never raises for anything a block
contains (TRN-8).
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


class BadDatabaseUrl(StoreError, ValueError):
    """What names the database is not a form markertools opens (FLT-8): an unknown URL
    scheme (`mysql://...`), a SQLite URL without its three slashes, an empty name, a
    PostgreSQL connection string libpq refuses. One line naming the URL (password
    hidden) and the forms accepted; no retry cures it. Also a ValueError, as before."""


class UnknownTask(StoreError, LookupError):
    """A write names a task the store does not hold (`record_cost`, `finish_turn`):
    refused, nothing written. `task_id` is the id asked for."""

    def __init__(self, task_id: str, what: str) -> None:
        self.task_id = task_id
        super().__init__(f"{what}: no task {task_id!r} in this store (nothing was written)")


class CodexError(MarkertoolsError):
    """The Codex adapter: the app-server child, its JSON-RPC answers, its files."""


class DatabaseExists(StoreError, FileExistsError):
    """A new database was to be made from a world file at a path that already exists:
    refused, the file left as it was. Still a FileExistsError."""


class OperationFailed(MarkertoolsError, RuntimeError):
    """An adapter's operation could not be done (the docker CLI failed, a process group it
    refuses to signal, a session it cannot resume, a row that changed under it); the
    message says which. Still a RuntimeError."""


class BinaryNotFound(MarkertoolsError, FileNotFoundError):
    """The offline helpers found no native Codex or Claude Code binary where the pinned
    npm install puts it. Still a FileNotFoundError."""


class WorktreeFailed(MarkertoolsError, OSError):
    """A task's git worktree could not be made (`git worktree add` failed). Still an
    OSError, as every other failure to prepare a task's directory."""


class ClaudeError(MarkertoolsError):
    """The Claude Code adapter: the `claude` child and its control protocol."""


# Rule 1: the exception classes that stay outside the tree, each private to one module
# of the core or the adapters (raised and caught there, never seen by a caller).
ALLOWED_OUTSIDE_THE_ROOT: Final[frozenset[str]] = frozenset(
    {
        "markertools.parse.jsonstrict._Refuse",  # the strict JSON reader's early exit
        "markertools.parse.validate._Skip",  # one field's refusal inside the validator
        "markertools_adapters.world._Bad",
        "markertools_adapters.codex._appserver._Shape",
        "markertools_adapters.codex._rollout._Shape",
        "markertools_adapters.codex._files._CorruptInput",
        "markertools_adapters.worktrees._Refusal",
        "markertools_adapters.worker.run._Ended",  # control flow inside one TaskRun
    }
)

__all__ = [
    "BadDatabaseUrl",
    "BinaryNotFound",
    "ClaudeError",
    "CodexError",
    "DatabaseExists",
    "MarkertoolsError",
    "OperationFailed",
    "StoreError",
    "StoreUnavailable",
    "UnknownTask",
    "WorktreeFailed",
]
