"""Shared builders and hypothesis strategies for the orchestration-proposal tests."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from markertools.plans import Proposal, RunState, new_run, validate_proposal


def role_dict(name: str, deps: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "backend": "codex",
        "cwd": "/work/project",
        "role": f"role of {name}",
        "instruction": f"first instruction of {name}",
        "sandbox": "read-only",
    }
    if deps is not None:
        out["dependsOn"] = deps
    out.update(extra)
    return out


def proposal_dict(workers: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "goal": "fix the module and verify",
        "plan": "reader finds, fixer fixes",
        "workers": workers if workers is not None else [role_dict("reader")],
        "quota": {"stopAtLeftPercent": 25, "bucket": "codex", "windowMinutes": 10080},
        "maxTurns": 12,
        "timeoutMs": 1_800_000,
        "allowedModels": [],
        "supervision": {
            "decisionTimeoutMs": 60_000,
            "maxDecisionRetries": 2,
            "maxTotalReminders": 8,
        },
    }
    out.update(extra)
    return out


def graph_proposal(names: list[str], deps: dict[str, list[str]], **extra: Any) -> dict[str, Any]:
    return proposal_dict([role_dict(n, list(deps.get(n, []))) for n in names], **extra)


def valid(raw: dict[str, Any], **kw: Any) -> Proposal:
    check = validate_proposal(raw, **kw)
    assert check.proposal is not None, [i.render() for i in check.issues]
    return check.proposal


def edit(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Copy of `raw` with the value at a dotted path ("workers.0.cwd") replaced;
    the sentinel DELETE removes the key."""
    out = copy.deepcopy(raw)
    node: Any = out
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if value is DELETE:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


DELETE = object()


def run_of(
    workers: list[dict[str, Any]] | None = None,
    *,
    max_concurrent: int = 3,
    now: float = 1000.0,
    **extra: Any,
) -> RunState:
    return new_run("r1", valid(proposal_dict(workers, **extra)), now, max_concurrent)


# ---- graphs -----------------------------------------------------------------------

NAME_POOL = [f"r{i}" for i in range(12)]


@st.composite
def dags(
    draw: st.DrawFn, min_size: int = 1, max_size: int = 12
) -> tuple[list[str], dict[str, list[str]]]:
    """Role names in declaration order and an acyclic dependsOn map. Edges go from a
    hidden topological rank to a lower one; declaration order is shuffled."""
    n = draw(st.integers(min_size, max_size))
    ranked = NAME_POOL[:n]
    deps: dict[str, list[str]] = {}
    for i, name in enumerate(ranked):
        earlier = ranked[:i]
        deps[name] = draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else []
    order = draw(st.permutations(ranked))
    return list(order), deps


def ancestors(deps: dict[str, list[str]], name: str) -> set[str]:
    """Every role `name` transitively depends on."""
    seen: set[str] = set()
    todo = list(deps.get(name, []))
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(deps.get(d, []))
    return seen


@st.composite
def cyclic_graphs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]]]:
    """A DAG plus 1-3 back edges, each closing a cycle (possibly a self-loop): for a
    role `hi` and a role `lo` it depends on (transitively) or `hi` itself, `lo` is
    made to depend on `hi`."""
    order, deps = draw(dags(min_size=1))
    for _ in range(draw(st.integers(1, 3))):
        hi = draw(st.sampled_from(order))
        lo = draw(st.sampled_from(sorted(ancestors(deps, hi) | {hi})))
        if hi not in deps[lo]:
            deps[lo].append(hi)
    return order, deps


def is_edge(deps: dict[str, list[str]], a: str, b: str) -> bool:
    """`a -> b` in the flow direction: b lists a in dependsOn."""
    return a in deps.get(b, [])


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)
