# Owns: task tokens (TOL-3), the binding of a same-turn tool server to exactly one task:
# minting one (an opaque random secret of at least 128 bits, stored only as its SHA-256
# hash with the task id and an expiry), authorising a presented token (the bound task
# id, or the refusal the caller answers every call with) and revoking a task's tokens.
# Pure functions over the `TaskTokenStore` port; the randomness and the time are given.
#
# Must never: store, log, return (beyond the one MintedToken) or put into a message the
# secret itself; raise while authorising (a failing store is a refusal).
#
# Invariants:
#   Rule 1: only `token_hash(token)` reaches the store; a refusal names which check
#           failed ("no token", "unknown token", "token expired", "token revoked", "task
#           is not running (STATUS)") and never the token.
#   Rule 2: minting for a task that does not exist or is not `running` raises
#           TaskTokenRefused and stores nothing (the store re-checks atomically).
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from typing import Final

import attrs

from markertools._root import InvalidArgument
from markertools.domain.errors import MarkertoolsError, summarize_error
from markertools.domain.ports import TaskTokenStore
from markertools.text.msg import Msg, msg

DEFAULT_TOKEN_TTL: Final[float] = 86400.0  # TOL-3: 24 hours
TOKEN_BYTES: Final[int] = 32  # 256 bits of randomness (TOL-3 asks for at least 128)
TOKEN_PREFIX: Final[str] = "mtt_"
MAX_TOKEN_CHARS: Final[int] = 512
_HEX: Final = re.compile(r"[0-9a-f]+")

__all__ = [
    "DEFAULT_TOKEN_TTL",
    "Authorization",
    "MintedToken",
    "TaskTokenRefused",
    "authorize_task_token",
    "mint_task_token",
    "revoke_task_tokens",
    "token_hash",
]


@attrs.frozen
class MintedToken:
    """A freshly minted task token (TOL-3): shown once; the store keeps only its hash."""

    task_id: str
    token: str = attrs.field(repr=False)  # never in a repr, a log line or an error
    expires_at: float


@attrs.frozen
class Authorization:
    """The answer to a presented token: `task_id` of the bound (running) task, or a
    `refusal` (`task_id` None) every call of the server answers with (TOL-3)."""

    task_id: str | None
    refusal: Msg | None = None

    @property
    def ok(self) -> bool:
        return self.refusal is None


class TaskTokenRefused(MarkertoolsError, ValueError):
    """TOL-3: a token can not be minted for this task - it does not exist or is not
    `running` (`status` None: no such task). Nothing was stored."""

    def __init__(self, task_id: str, status: str | None) -> None:
        super().__init__(task_id, status)  # picklable: args rebuild it
        self.task_id = task_id
        self.status = status

    def __str__(self) -> str:
        if self.status is None:
            return f"no task {self.task_id!r}: a token binds an existing running task"
        return f"task {self.task_id!r} is {self.status}, not running: a token binds a running task"


def token_hash(token: str) -> str:
    """The SHA-256 (hex) of the token's UTF-8 bytes: all a store ever keeps of it."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def mint_task_token(
    store: TaskTokenStore,
    task_id: str,
    *,
    now: float,
    token_hex: Callable[[int], str],
    ttl_seconds: float = DEFAULT_TOKEN_TTL,
) -> MintedToken:
    """TOL-3: mint a token for the running task `task_id`, valid `ttl_seconds` from
    `now`. `token_hex` is the random source (`RandomSource.token_hex`): 32 bytes are drawn.

    Raises TaskTokenRefused when the task does not exist or is not running (nothing
    stored), ValueError for a ttl that is not a positive finite number or a random source
    that returned fewer than 128 bits of hex."""
    if (
        isinstance(ttl_seconds, bool)
        or not isinstance(ttl_seconds, int | float)
        or not math.isfinite(ttl_seconds)
        or ttl_seconds <= 0
    ):
        raise InvalidArgument(f"ttl_seconds must be a positive number of seconds; got {ttl_seconds!r}")
    task = store.get_task(task_id)
    if task is None or task.status != "running":
        raise TaskTokenRefused(task_id, None if task is None else task.status)
    secret = token_hex(TOKEN_BYTES)
    if not isinstance(secret, str) or len(secret) < 32 or not _HEX.fullmatch(secret):
        raise InvalidArgument("the random source must return at least 32 lowercase hex digits")
    token = TOKEN_PREFIX + secret
    expires_at = float(now) + float(ttl_seconds)
    if not store.insert_task_token(token_hash(token), task_id, expires_at):
        current = store.get_task(task_id)  # changed meanwhile (Rule 2)
        raise TaskTokenRefused(task_id, None if current is None else current.status)
    return MintedToken(task_id, token, expires_at)


def _refused(why: Msg) -> Authorization:
    return Authorization(None, msg("tools.not_authorised", why=why))


def authorize_task_token(store: TaskTokenStore, token: str | None, now: float) -> Authorization:
    """TOL-3: the task a presented token binds, or why every call is refused: no token,
    an unknown, expired or revoked one, or a bound task that is not running. Never
    raises; a failing store refuses (fail closed) naming the error, never the token."""
    if token is None or not isinstance(token, str) or not token.strip():
        return _refused(msg("tools.no_token"))
    if len(token) > MAX_TOKEN_CHARS:
        return _refused(msg("tools.unknown_token"))
    try:
        stored = store.task_token(token_hash(token.strip()))
        if stored is None:
            return _refused(msg("tools.unknown_token"))
        if stored.revoked:
            return _refused(msg("tools.token_revoked"))
        if now >= stored.expires_at:
            return _refused(msg("tools.token_expired"))
        task = store.get_task(stored.task_id)
    except Exception as exc:
        return _refused(msg("tools.token_check_failed", error=summarize_error(exc)))
    if task is None:
        return _refused(msg("tools.task_missing"))
    if task.status != "running":
        return _refused(msg("tools.task_not_running", status=task.status))
    return Authorization(task.id)


def revoke_task_tokens(store: TaskTokenStore, task_id: str) -> int:
    """TOL-3: revoke every token of the task (`tools revoke`); how many were revoked."""
    return store.revoke_task_tokens(task_id)
