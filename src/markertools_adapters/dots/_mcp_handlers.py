# Owns: the nine tools of `dots serve` (mcp.py, DOT-13): `DotsTools`, each tool's call
# of the Supervisor's typed Python API with its checked arguments (`_mcp_args`), answered
# as (structured content, the one line a person reads); `run_line`, that line for a run;
# and `resources/list_changed` when a run of the caller is created or ends.
#
# Must never: check arguments (mcp.py did, against the tool's one declaration), decide
# who the caller is (mcp.py's `owner`), or raise anything but a DotsError for what a
# caller sent.
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged

from markertools import msg
from markertools_adapters.dots._mcp_args import (
    ControlArgs,
    DispatchArgs,
    FinishArgs,
    StartArgs,
    StatusArgs,
    ThreadReadArgs,
    ThreadsArgs,
    TuneArgs,
)
from markertools_adapters.dots._mcp_notify import Link
from markertools_adapters.dots._supervisor import Supervisor
from markertools_adapters.dots._views import FINISHED

log = logging.getLogger("markertools.dots.mcp")

Handler = Callable[[str, str, Any], Awaitable[tuple[dict[str, Any], str]]]


def run_line(view: Mapping[str, Any], locale: str = "en") -> str:
    def worker(w: Mapping[str, Any]) -> str:
        if w.get("decision"):
            key, extra = "dots.tool.worker_decision", {"decision": w["decision"]["id"]}
        else:
            key, extra = "dots.tool.worker", {}
        return msg(key, name=w["name"], state=w["state"], **extra).render(locale)

    workers = ", ".join(worker(w) for w in view.get("workers") or [])
    none = msg("dots.tool.none").render(locale)
    return msg(
        "dots.tool.run", run=view["runId"], state=view["state"], workers=workers or none
    ).render(locale)


class DotsTools:
    """The tools of one `dots serve` over its Supervisor; `links` lists the server's open
    connections (for `resources/list_changed`), `bus` its subscription bus."""

    def __init__(
        self,
        sup: Supervisor,
        links: Callable[[], list[Link]],
        bus: InMemorySubscriptionBus,
    ) -> None:
        self.sup = sup
        self.links = links
        self.bus = bus

    def table(self) -> dict[str, Handler]:
        """Tool name -> its handler, in the order `tools/list` shows them."""
        return {
            "dots_probe": self.probe,
            "dots_threads": self.threads,
            "dots_thread_read": self.thread_read,
            "dots_start": self.start,
            "dots_status": self.status,
            "dots_dispatch": self.dispatch,
            "dots_tune": self.tune,
            "dots_control": self.control,
            "dots_finish": self.finish,
        }

    def say(self, key: str, **args: Any) -> str:
        return msg(key, **args).render(self.sup.locale)

    def line(self, view: Mapping[str, Any]) -> str:
        return run_line(view, self.sup.locale)

    async def probe(self, tool: str, owner: str, args: Any) -> tuple[dict[str, Any], str]:
        result = await self.sup.probe()
        return result.to_json(), self.say(
            "dots.tool.probe", model=result.model, effort=result.effort
        )

    async def threads(self, tool: str, owner: str, args: ThreadsArgs) -> tuple[dict[str, Any], str]:
        opts = args.options
        result = await self.sup.threads(
            cwd=opts.cwd if opts else None,
            search=opts.searchTerm if opts else None,
            archived=opts.archived if opts else None,
            cursor=opts.cursor if opts else None,
            limit=opts.limit if opts else 25,
        )
        n, p = len(result.threads), len(result.projects())
        return result.to_json(), self.say("dots.tool.threads", n=n, p=p)

    async def thread_read(
        self, tool: str, owner: str, args: ThreadReadArgs
    ) -> tuple[dict[str, Any], str]:
        opts = args.options
        result = await self.sup.thread_read(
            args.threadId, limit=opts.limit if opts else 5, cursor=opts.cursor if opts else None
        )
        text = self.say("dots.tool.history", thread=result.thread_id, n=len(result.turn_ids))
        return result.to_json(), text

    async def start(self, tool: str, owner: str, args: StartArgs) -> tuple[dict[str, Any], str]:
        view = (await self.sup.start(args.proposal, owner=owner)).to_json()
        await self.list_changed(owner)
        return view, self.say("dots.tool.started", line=self.line(view))

    async def status(self, tool: str, owner: str, args: StatusArgs) -> tuple[dict[str, Any], str]:
        if args.waitMs:
            views = await self.sup.wait(owner=owner, wait_ms=args.waitMs, run_id=args.runId)
        else:
            views = self.sup.status(owner=owner, run_id=args.runId)
        runs = [v.to_json() for v in views]
        text = "; ".join(self.line(v) for v in runs) or self.say("dots.tool.no_runs")
        aside = self.sup.quarantined_of(owner)  # runs of this conversation set aside at start
        for q in aside:
            text += "; " + self.say("dots.tool.quarantined", file=q.file, reason=q.reason)
        return {"runs": runs, "quarantined": [q.to_json() for q in aside]}, text

    async def dispatch(
        self, tool: str, owner: str, args: DispatchArgs
    ) -> tuple[dict[str, Any], str]:
        view = self.sup.dispatch(
            owner=owner,
            run_id=args.runId,
            worker=args.worker,
            instruction=args.instruction,
            decision_id=args.decisionId,
        ).to_json()
        return view, self.say("dots.tool.dispatched", worker=args.worker, line=self.line(view))

    async def tune(self, tool: str, owner: str, args: TuneArgs) -> tuple[dict[str, Any], str]:
        changes = args.changes.model_dump(exclude_none=True)
        view = (
            await self.sup.tune(owner=owner, run_id=args.runId, worker=args.worker, changes=changes)
        ).to_json()
        return view, self.say("dots.tool.tuned", worker=args.worker, line=self.line(view))

    async def control(self, tool: str, owner: str, args: ControlArgs) -> tuple[dict[str, Any], str]:
        view = (
            await self.sup.control(
                owner=owner, run_id=args.runId, action=args.action, budget=args.budget
            )
        ).to_json()
        if view["state"] in FINISHED:
            await self.list_changed(owner)
        return view, self.say("dots.tool.control", action=args.action, line=self.line(view))

    async def finish(self, tool: str, owner: str, args: FinishArgs) -> tuple[dict[str, Any], str]:
        view = self.sup.finish(
            owner=owner,
            run_id=args.runId,
            conclusion=args.conclusion,
            worker=args.worker,
            decision_id=args.decisionId,
        ).to_json()
        if view["state"] in FINISHED:
            await self.list_changed(owner)
        if args.worker:
            return view, self.say(
                "dots.tool.finished_worker", worker=args.worker, line=self.line(view)
            )
        return view, self.say("dots.tool.finished_run", line=self.line(view))

    async def list_changed(self, owner: str) -> None:
        """A run of `owner` was created or ended: `resources/list_changed` (best effort)."""
        for link in self.links():
            if owner not in link.owners:
                continue
            try:
                if link.session is not None:
                    await link.session.send_resource_list_changed()
                else:
                    await self.bus.publish(ResourcesListChanged())
            except Exception as exc:
                log.info("resources/list_changed not sent: %s", exc)
