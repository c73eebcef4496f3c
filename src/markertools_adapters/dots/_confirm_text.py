# Owns: what a person is asked to confirm (DOT-14): the two questions before a run
# starts (the plan; the workers and limits to launch), raising the turn budget, and
# widening a worker (dots_tune). Builds `ConfirmRequest` values - title, the readable
# lines (from the message catalogue, in the supervisor's locale) and the same facts as
# JSON-ready details. Pure: no I/O, no answers.
#
# Must never: leave out a fact the confirmation is about (cwd, sandbox, model, limits,
# a thread taken over), or word one value as another.
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markertools import msg
from markertools.plans import HostSettings, Proposal, proposal_to_json
from markertools_adapters.codex.answers import HistoryTurn
from markertools_adapters.dots._ports import ConfirmRequest


def say(locale: str, key: str, **args: Any) -> str:
    """A catalogue text rendered in `locale`."""
    return msg(key, **args).render(locale)


def _quota_stop(left: float | None, locale: str) -> str:
    if left is None:
        return msg("dots.confirm.quota_none").render(locale)
    return msg("dots.confirm.quota_at", left=f"{left:g}").render(locale)


def start_requests(
    plan: Proposal,
    heads: Mapping[str, Sequence[HistoryTurn]],
    settings: HostSettings,
    locale: str,
) -> tuple[ConfirmRequest, ConfirmRequest]:
    """The plan, then the launch: what `dots_start` asks before anything exists."""
    def r(key: str, **kw: Any) -> str:
        return say(locale, key, **kw)

    body = proposal_to_json(plan)
    lines = [r("dots.confirm.goal", text=plan.goal), r("dots.confirm.plan", text=plan.plan)]
    lines.append(r("dots.confirm.workers"))
    for w in plan.workers:
        after = r("dots.confirm.after", deps=", ".join(w.depends_on)) if w.depends_on else ""
        lines.append(
            r("dots.confirm.worker_role", name=w.name, backend=w.backend, after=after, role=w.role)
        )
    first = ConfirmRequest(
        "plan",
        r("dots.confirm.plan.title"),
        "\n".join(lines),
        {"goal": plan.goal, "plan": plan.plan, "workers": [w["name"] for w in body["workers"]]},
    )
    launch = [r("dots.confirm.workers")]
    workers: list[dict[str, Any]] = []
    for w in plan.workers:
        launch.append(
            r(
                "dots.confirm.worker_launch",
                name=w.name,
                cwd=w.cwd,
                sandbox=w.sandbox,
                model=w.model or r("dots.confirm.default_model"),
                effort=w.effort or r("dots.confirm.default_effort"),
            )
        )
        item: dict[str, Any] = {
            "name": w.name,
            "cwd": w.cwd,
            "sandbox": w.sandbox,
            "model": w.model,
            "effort": w.effort,
        }
        if w.existing_thread_id is not None:
            launch.append(r("dots.confirm.takeover", thread=w.existing_thread_id))
            for turn in heads.get(w.name, ()):
                launch.append(
                    r(
                        "dots.confirm.history_turn",
                        turn=turn.id,
                        user=repr(turn.user),
                        agent=repr(turn.agent),
                    )
                )
            item["existingThreadId"] = w.existing_thread_id
            item["historyHead"] = [t.to_json() for t in heads.get(w.name, ())]
        workers.append(item)
    models = list(plan.allowed_models)
    launch.append(
        r(
            "dots.confirm.limits",
            max_turns=plan.max_turns,
            timeout_ms=plan.timeout_ms,
            max_concurrent=settings.max_concurrent,
            quota_stop=_quota_stop(plan.quota.stop_at_left_percent, locale),
            models=str(models) if models else r("dots.confirm.models_none"),
        )
    )
    second = ConfirmRequest(
        "launch",
        r("dots.confirm.launch.title"),
        "\n".join(launch),
        {
            "workers": workers,
            "maxTurns": plan.max_turns,
            "timeoutMs": plan.timeout_ms,
            "maxConcurrent": settings.max_concurrent,
            "allowedModels": models,
        },
    )
    return first, second


def budget_request(run_id: str, old: int, new: int, locale: str) -> ConfirmRequest:
    return ConfirmRequest(
        "budget",
        msg("dots.confirm.budget.title").render(locale),
        msg("dots.confirm.budget", run=run_id, old=old, new=new).render(locale),
        {"runId": run_id, "maxTurns": new},
    )


def tune_request(
    run_id: str, worker: str, widen: Sequence[str], changes: Mapping[str, Any], locale: str
) -> ConfirmRequest:
    return ConfirmRequest(
        "tune",
        msg("dots.confirm.tune.title", worker=worker).render(locale),
        "\n".join(widen),
        {"runId": run_id, "worker": worker, "changes": dict(changes)},
    )
