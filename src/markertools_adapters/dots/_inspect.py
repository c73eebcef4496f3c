# Owns: the supervisor's access to Codex that is not a worker's turn (DOT-3, DOT-5,
# DOT-8, DOT-13): finding and checking the codex executable, the environment of every
# child, one shared read-only "utility" app-server, the merged rate-limit snapshot, and
# the read-only calls (`probe`, `threads`, `thread_read`, a thread's history) as typed
# views. Answers are decoded once (`codex.answers`).
#
# Must never: start a turn, change a thread, hand raw app-server JSON to a caller, or let
# a Codex failure of a read-only call escape as anything but a DotsError of one line
# (naming the argument Codex refused, when it says which).
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from markertools import frame_data, msg
from markertools_adapters.clock import SystemRandom
from markertools_adapters.codex.answers import (
    RateLimits,
    ThreadHistory,
    decode_model_list,
    decode_rate_limits,
    decode_thread,
    decode_thread_list,
    rate_limits_of_read,
)
from markertools_adapters.codex.client import AppServerClient, AppServerError, Json
from markertools_adapters.dots._ports import DotsError
from markertools_adapters.dots._views import (
    ModelView,
    ProbeView,
    ThreadItem,
    ThreadReadView,
    ThreadsView,
    head,
)
from markertools_adapters.dots._worker import CLIENT_INFO
from markertools_adapters.errors import CodexError

MIN_CODEX: Final[tuple[int, int, int]] = (0, 169, 0)
WORKER_ENV: Final[str] = "MARKERTOOLS_DOTS_WORKER"  # set in every worker's environment
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def summary(exc: BaseException) -> str:
    """An exception on one line of at most 300 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _said(exc: BaseException) -> str:
    """What Codex said, on one line of at most 300 characters (of an error answer, its
    message without the method and code)."""
    raw = exc.message if isinstance(exc, AppServerError) else str(exc)
    text = " ".join(raw.split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


def _blamed(detail: str, given: Mapping[str, object]) -> str | None:
    """The argument Codex's error names, among those the call passed."""
    lowered = detail.lower()
    for name, value in given.items():
        if value is not None and name.lower() in lowered:
            return name
    return None


class CodexAccess:
    """The codex executable, child environments, the utility app-server and the
    rate-limit snapshot of one supervisor."""

    def __init__(
        self,
        root: Path,
        *,
        codex_bin: str | None,
        codex_env: Mapping[str, str] | None,
        request_timeout: float,
        locale: str,
    ) -> None:
        self.root = root
        self.codex_bin = codex_bin
        self.codex_env = dict(codex_env) if codex_env is not None else None
        self.request_timeout = request_timeout
        self.locale = locale
        self.random = SystemRandom()
        self.checked: str | None = None
        self.rate_limits: RateLimits | None = None
        self._utility: AppServerClient | None = None
        self._utility_lock = asyncio.Lock()

    def _error(self, key: str, field: str | None, **args: Any) -> DotsError:
        return DotsError(msg(key, **args).render(self.locale), field)

    @contextlib.contextmanager
    def _answering(self, call: str, given: Mapping[str, object] | None = None) -> Iterator[None]:
        """A Codex failure of a read-only call as one line naming the argument Codex
        refused (when its message says which): no traceback, no raw answer."""
        try:
            yield
        except (CodexError, OSError) as exc:
            detail = _said(exc)
            field = _blamed(detail, given) if given and isinstance(exc, AppServerError) else None
            raise self._error("dots.err.codex_call", field, call=call, detail=detail) from None

    async def binary(self) -> str:
        """The codex executable (`codexBin`, else PATH), checked to be at least
        MIN_CODEX; a clear error otherwise (DOT-3)."""
        if self.checked is not None:
            return self.checked
        binary = self.codex_bin or shutil.which("codex")
        if not binary:
            raise self._error("dots.err.no_codex", "codexBin")
        try:
            proc = await asyncio.create_subprocess_exec(
                binary,
                "--version",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self.child_env(None),
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
        except (OSError, TimeoutError) as exc:
            raise self._error(
                "dots.err.codex_failed", "codexBin", binary=binary, detail=summary(exc)
            ) from None
        found = _VERSION.search(out.decode("utf-8", "replace"))
        version = tuple(int(x) for x in found.groups()) if found else None
        if version is None or version < MIN_CODEX:
            shown = ".".join(map(str, version)) if version else "unknown"
            need = ".".join(map(str, MIN_CODEX))
            raise self._error(
                "dots.err.codex_version", "codexBin", binary=binary, version=shown, need=need
            )
        self.checked = binary
        return binary

    def child_env(self, worker: str | None) -> dict[str, str]:
        env = dict(self.codex_env) if self.codex_env is not None else dict(os.environ)
        if worker is not None:
            env[WORKER_ENV] = worker  # a dots server started inside a worker refuses changes
        return env

    def merge_rate_limits(self, update: Json) -> None:
        """`account/rateLimits/updated` is sparse: merged into the last snapshot."""
        decoded = decode_rate_limits(update)
        if decoded is not None:
            self.rate_limits = (self.rate_limits or RateLimits()).merged(decoded)

    async def utility(self) -> AppServerClient:
        """A shared app-server for probe / threads / thread_read (read-only calls)."""
        async with self._utility_lock:
            if self._utility is not None and self._utility.running:
                return self._utility
            binary = await self.binary()
            # its cwd: the state directory when it exists; the inspection commands
            # (`dots probe`, `dots threads`) create nothing, so before the first run the
            # temporary directory stands in (the read-only calls do not depend on it)
            cwd = self.root if self.root.is_dir() else Path(tempfile.gettempdir())
            client = AppServerClient(
                binary,
                env=self.child_env("utility"),
                cwd=str(cwd),
                default_timeout=self.request_timeout,
                queue_events=False,
                on_notification=self._utility_notification,
            )
            await client.start()
            try:
                await client.initialize(CLIENT_INFO)
            except BaseException:  # its process and background work end here, not leak
                with contextlib.suppress(Exception):
                    await client.close(grace=1.0)
                raise
            self._utility = client
            return client

    def _utility_notification(self, message: Json, raw: str) -> None:
        if message.get("method") == "account/rateLimits/updated":
            params = message.get("params")
            if isinstance(params, dict) and isinstance(params.get("rateLimits"), dict):
                self.merge_rate_limits(params["rateLimits"])

    async def close(self) -> None:
        client, self._utility = self._utility, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close(grace=2.0)

    async def history(self, thread_id: str) -> ThreadHistory:
        """A thread's turns (raises AppServerError when it cannot be read)."""
        client = await self.utility()
        return decode_thread(await client.thread_read(thread_id, include_turns=True))

    # ---- read-only calls ------------------------------------------------------------

    async def probe(self) -> ProbeView:
        """dots_probe: the default model and effort, rate-limit windows, credits."""
        with self._answering("model/list"):
            client = await self.utility()
            listing = decode_model_list(await client.model_list())
        default = listing.default()
        source = "read"
        limits: RateLimits | None
        with self._answering("account/rateLimits/read"):
            try:
                limits = rate_limits_of_read(await client.rate_limits_read())
            except AppServerError as exc:
                limits, source = self.rate_limits, f"update notifications ({exc.message})"
        if limits is None:
            source = "unknown"
        return ProbeView(
            model=default.model if default else None,
            effort=default.default_effort if default else None,
            models=tuple(ModelView(m.model, m.efforts, m.is_default) for m in listing.models),
            source=source,
            windows=limits.windows() if limits else (),
            credits=limits.credits if limits else None,
        )

    async def threads(
        self,
        *,
        cwd: str | None,
        search: str | None,
        archived: bool | None,
        cursor: str | None,
        limit: int,
    ) -> ThreadsView:
        """dots_threads: persistent threads by cwd / searchTerm / archived, paged."""
        given = {"cwd": cwd, "searchTerm": search, "archived": archived, "cursor": cursor}
        params: dict[str, Any] = {"limit": limit}
        params.update((k, v) for k, v in given.items() if v is not None)
        with self._answering("thread/list", given):
            client = await self.utility()
            page = decode_thread_list(await client.thread_list(**params))
        return ThreadsView(
            tuple(
                ThreadItem(t.id, t.cwd, head(t.preview), t.updated_at, t.model)
                for t in page.threads
            ),
            page.next_cursor,
        )

    async def thread_read(
        self, thread_id: str, *, limit: int, cursor: str | None
    ) -> ThreadReadView:
        """dots_thread_read: recent history, newest last, framed as data (INJ-7)."""
        end: int | None = None
        if cursor is not None:
            if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 12):
                raise self._error("dots.err.cursor", "cursor")
            end = int(cursor)
        with self._answering("thread/read"):
            client = await self.utility()
        try:
            history = decode_thread(await client.thread_read(thread_id, include_turns=True))
        except AppServerError as exc:
            raise self._error(
                "dots.err.thread_read", "threadId", thread=thread_id, detail=_said(exc)
            ) from None
        except (CodexError, OSError) as exc:
            raise self._error(
                "dots.err.codex_call", None, call="thread/read", detail=_said(exc)
            ) from None
        turns = history.turns
        stop = len(turns) if end is None else min(end, len(turns))
        start = max(0, stop - limit)
        page = turns[start:stop]
        lines = [f"turn {t.id}:\nuser: {t.user}\nagent: {t.agent}" for t in page]
        framed = frame_data(
            "\n\n".join(lines) or "(no turns)",
            msg("plan.thread_history", thread=thread_id),
            self.random,
            self.locale,
        )
        return ThreadReadView(
            thread_id=thread_id,
            cwd=history.cwd,
            history=framed.text,
            turn_ids=tuple(t.id for t in page),
            next_cursor=str(start) if start > 0 else None,
        )
