# Owns: what one request of `tools serve` carries beside its arguments (TOL-3, TOL-6,
# TOL-11): its token (`env_token` for stdio, read at every call from
# MARKERTOOLS_TASK_TOKEN; `bearer_token` for Streamable HTTP, the request's
# `Authorization: Bearer` header), the key a token's bounds go by (`token_key`, a hash:
# the server keeps no token), the scope key of the event the HTTP gate sets when the
# request's exchange ends (`GONE_KEY`), and the progress a waiting call reports.
#
# Must never: keep, log or return a token beyond the call that presented it.
from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any, Final

import anyio
from mcp.server.mcpserver import Context

from markertools import summarize_error

log = logging.getLogger("markertools.tools.serve")

TOKEN_ENV: Final[str] = "MARKERTOOLS_TASK_TOKEN"
GONE_KEY: Final[str] = "markertools.request_gone"  # an ASGI scope key: anyio.Event

TokenSource = Callable[[Context[Any, Any]], str | None]


def env_token(_: Context[Any, Any]) -> str | None:
    """stdio: the token in MARKERTOOLS_TASK_TOKEN, read at every call."""
    return os.environ.get(TOKEN_ENV)


def bearer_of(value: object) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header value."""
    if not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def bearer_token(ctx: Context[Any, Any]) -> str | None:
    """Streamable HTTP: the request's `Authorization: Bearer TOKEN` header."""
    headers = ctx.headers
    return None if headers is None else bearer_of(headers.get("authorization"))


def token_key(token: str | None) -> str:
    """What the server keys a token's bounds by: a hash, never the token ("" for none)."""
    if not token:
        return ""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


async def report_progress(
    ctx: Context[Any, Any], started: float, every: float, total: float
) -> None:
    """TOL-6: `notifications/progress` every `every` seconds while a call waits (a no-op
    when the client sent no progress token): milliseconds waited of `total`."""
    while True:
        await anyio.sleep(every)
        waited = (time.monotonic() - started) * 1000.0
        try:
            await ctx.report_progress(min(waited, total), total, "waiting")
        except Exception as exc:  # a closed stream: the result will not arrive either
            log.info("progress not sent: %s", summarize_error(exc))
            return
