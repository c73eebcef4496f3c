# Owns: the role dependency graph (PLN-3, PLN-5): cycle finding (naming the roles on
# each cycle), topological order, and the pure scheduling answer "which roles may run
# now, given the finished ones and their accepted conclusions".
#
# Direction: `a -> b` means "a runs before b" (b lists a in `dependsOn`). A cycle is
# reported as a closed walk in that direction, starting at its earliest-declared role:
# `reader -> fixer -> reader`.
#
# Invariants:
#   Rule 1: every function is deterministic: ties are broken by declaration order.
#   Rule 2: a role is ready only when every dependency finished with an accepted
#           conclusion (PLN-5); it receives those conclusions in `dependsOn` order.
#   Rule 3: no recursion (graphs from untrusted input cannot exhaust the stack).
from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping, Sequence

import attrs

from markertools.domain.errors import MarkertoolsError
from markertools.plans._model import Proposal


class ScheduleError(MarkertoolsError, ValueError):
    """The finished/running roles given to `schedule` are inconsistent with the plan."""


def _successors(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    succ: dict[str, list[str]] = {n: [] for n in order}
    for b in order:
        for a in dict.fromkeys(deps.get(b, ())):
            if a in succ:
                succ[a].append(b)
    return succ


def _components(order: Sequence[str], succ: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in order:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = succ[node]
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp: list[str] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                comps.append(comp)
    return comps


def find_cycles(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """One closed cycle per strongly connected component that has one (self-loops
    included), e.g. ("reader", "fixer", "reader"); components in declaration order of
    their first role. Dependencies naming unknown roles are ignored here."""
    succ = _successors(order, deps)
    position = {n: i for i, n in enumerate(order)}
    cycles: list[tuple[str, ...]] = []
    for comp in _components(order, succ):
        members = set(comp)
        start = min(comp, key=position.__getitem__)
        if len(comp) == 1 and start not in succ[start]:
            continue
        # shortest walk start -> ... -> start inside the component (BFS)
        parent: dict[str, str] = {}
        queue = deque([start])
        found: str | None = None
        while queue and found is None:
            node = queue.popleft()
            for nxt in succ[node]:
                if nxt == start:
                    found = node
                    break
                if nxt in members and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        assert found is not None  # a non-trivial SCC always closes through start
        path = [found]
        while path[-1] != start:
            path.append(parent[path[-1]])
        path.reverse()
        cycles.append((*path, start))
    cycles.sort(key=lambda c: position[c[0]])
    return cycles


def topological_order(proposal: Proposal) -> tuple[str, ...]:
    """Roles in an order where every role comes after its dependencies (Kahn's
    algorithm; among roles free at the same time, declaration order first)."""
    order = proposal.role_names
    deps = {r.name: set(r.depends_on) for r in proposal.workers}
    done: list[str] = []
    placed: set[str] = set()
    while len(done) < len(order):
        for name in order:
            if name not in placed and deps[name] <= placed:
                done.append(name)
                placed.add(name)
                break
        else:  # unreachable for a validated (acyclic) proposal
            raise ScheduleError("dependency cycle")
    return tuple(done)


@attrs.frozen
class ReadyRole:
    """A role that may run: the conclusions it receives, in `dependsOn` order."""

    name: str
    inputs: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class Schedule:
    """PLN-5 answer. `ready`: every role whose dependencies all finished (declaration
    order); `start`: the first of them that fit under `max_concurrent` alongside the
    running roles; `waiting`: each other unfinished role with its unfinished deps."""

    ready: tuple[ReadyRole, ...]
    start: tuple[str, ...]
    waiting: tuple[tuple[str, tuple[str, ...]], ...]
    finished: tuple[str, ...]
    running: tuple[str, ...]


def schedule(
    proposal: Proposal,
    finished: Mapping[str, str],
    running: Collection[str] = (),
    max_concurrent: int = 3,
) -> Schedule:
    """Which roles may run now. `finished` maps each role that finished with an
    accepted conclusion to that conclusion; `running` roles occupy slots.

    Raises ScheduleError for an unknown role, a role both finished and running, a
    role given as finished/running before one of its dependencies finished, or
    `max_concurrent` outside 1-3 (PLN-10)."""
    if not 1 <= max_concurrent <= 3:
        raise ScheduleError(f"maxConcurrent must be between 1 and 3, got {max_concurrent}")
    names = set(proposal.role_names)
    for name in [*finished, *running]:
        if name not in names:
            raise ScheduleError(f"unknown role {name!r}")
    both = sorted(set(finished) & set(running))
    if both:
        raise ScheduleError(f"role {both[0]!r} cannot be both finished and running")
    for role in proposal.workers:
        if role.name in finished or role.name in running:
            missing = [d for d in role.depends_on if d not in finished]
            if missing:
                raise ScheduleError(
                    f"role {role.name!r} cannot have started before its dependency "
                    f"{missing[0]!r} finished"
                )
    ready: list[ReadyRole] = []
    waiting: list[tuple[str, tuple[str, ...]]] = []
    for role in proposal.workers:
        if role.name in finished or role.name in running:
            continue
        unfinished = tuple(d for d in role.depends_on if d not in finished)
        if unfinished:
            waiting.append((role.name, unfinished))
        else:
            ready.append(ReadyRole(role.name, tuple((d, finished[d]) for d in role.depends_on)))
    free = max(0, max_concurrent - len(running))
    return Schedule(
        ready=tuple(ready),
        start=tuple(r.name for r in ready[:free]),
        waiting=tuple(waiting),
        finished=tuple(n for n in proposal.role_names if n in finished),
        running=tuple(n for n in proposal.role_names if n in running),
    )
