# Owns: the notifier port of `dots serve` (DOT-9/10): a notice goes to the main
# conversation as MCP notifications on every live connection that conversation has
# used (`notifications/resources/updated` for `dots://runs/{runId}`, plus
# `notifications/resources/list_changed` when a run ends; on a 2026-07-28 connection
# the same events go to `subscriptions/listen` streams), and, when configured, to a
# command hook (`--notify-command`: the notice as JSON on stdin, exit 0 = delivered,
# anything else = failed).
#
# Invariants:
#   Rule 1: a conversation with no live connection and no hook is "offline", never
#           "failed": its notices wait in the outbox and go out when it calls again
#           (the supervisor's HostOnline on status / wait, DOT-10).
#   Rule 2: the hook gets the notice on stdin only (no shell, no arguments built from
#           notice text) and is killed after `hook_timeout`.
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shlex
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, SubscriptionBus

from markertools_adapters.dots._ports import NoticeOut, NotifyAnswer

log = logging.getLogger("markertools.dots.mcp")

RUN_URI: Final[str] = "dots://runs/{runId}"
LIST_KINDS: Final[frozenset[str]] = frozenset({"completed", "cancelled"})


def run_uri(run_id: str) -> str:
    return RUN_URI.replace("{runId}", run_id)


def notice_json(notice: NoticeOut) -> dict[str, Any]:
    return {
        "noticeId": notice.notice_id,
        "runId": notice.run_id,
        "conversation": notice.owner,
        "kind": notice.kind,
        "worker": notice.role,
        "decisionId": notice.decision_id,
        "text": notice.text,
        "replyHead": notice.reply_head,
        "uri": run_uri(notice.run_id),
    }


@attrs.define(eq=False)
class Link:
    """One live MCP connection (a lifespan of the server) and the conversations that
    called through it. `session` is set on a handshake-era connection (it can send
    notifications at any time); a 2026-07-28 connection has none and is reached
    through the subscription bus."""

    conversation: str  # the connection's own default conversation id
    owners: set[str] = attrs.Factory(set)
    session: ServerSession | None = None
    modern: bool = False


class McpNotifier:
    """The Supervisor's notifier in `dots serve` (see the module header)."""

    def __init__(
        self,
        links: Callable[[], Sequence[Link]],
        bus: SubscriptionBus,
        *,
        command: Sequence[str] | str | None = None,
        hook_timeout: float = 30.0,
    ) -> None:
        self._links = links
        self._bus = bus
        self.command = shlex.split(command) if isinstance(command, str) else command
        self.hook_timeout = hook_timeout
        self.sent: list[NoticeOut] = []  # every notice handed to a live connection

    async def notify(self, notice: NoticeOut) -> NotifyAnswer:
        live = await self._to_connections(notice)
        if self.command:
            return await self._hook(notice)
        return live

    async def _to_connections(self, notice: NoticeOut) -> NotifyAnswer:
        links = [link for link in self._links() if notice.owner in link.owners]
        if not links:
            return "offline"
        uri = run_uri(notice.run_id)
        delivered = False
        for link in links:
            try:
                if link.session is not None:
                    await link.session.send_resource_updated(uri)
                    if notice.kind in LIST_KINDS:
                        await link.session.send_resource_list_changed()
                else:
                    await self._bus.publish(ResourceUpdated(uri=uri))
                    if notice.kind in LIST_KINDS:
                        await self._bus.publish(ResourcesListChanged())
                delivered = True
            except Exception as exc:  # a closed stream: try the others
                log.info("notice %s not sent on a connection: %s", notice.notice_id, exc)
        if delivered:
            self.sent.append(notice)
        return "delivered" if delivered else "failed"

    async def _hook(self, notice: NoticeOut) -> NotifyAnswer:
        assert self.command
        body = json.dumps(notice_json(notice), ensure_ascii=False).encode()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            log.warning("notify command %s could not start: %s", self.command[0], exc)
            return "failed"
        try:
            _, err = await asyncio.wait_for(proc.communicate(body), self.hook_timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            log.warning("notify command timed out after %.0f s", self.hook_timeout)
            return "failed"
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip()[-200:]
            log.warning("notify command exited %s: %s", proc.returncode, tail)
            return "failed"
        return "delivered"
