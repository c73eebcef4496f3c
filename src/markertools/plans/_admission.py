# Owns: host-wide launch admission (DOT-6, PLN-10) as one pure function: given every
# run on a host, the roles the host is launching right now and the directory key of
# each role, which (run, role) pairs to launch now. The supervisor asks it once per
# tick and launches exactly what it answers; nothing else decides admission.
#
# Invariants:
#   Rule 1: never more than `max_concurrent` turns live on the host (live roles of
#           every run plus the roles being launched plus the answer), and never more
#           than a run's own `max_concurrent` in that run.
#   Rule 2: never two turns in one directory: a role whose directory key is used by a
#           live or launching role of any run, or by another role of the answer, is not
#           admitted (the key is whatever the host compares: the resolved real path).
#   Rule 3: only queued roles of running runs whose dependencies all completed, in
#           declaration order within a run.
#   Rule 4: fair across runs: runs take turns, one role per run per round, starting
#           with the run after `after` (the last run admitted), so a run with many
#           ready roles cannot starve the others.
from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from markertools.plans._machines import LIVE_ROLE_STATES
from markertools.plans._proposal import normalize_cwd
from markertools.plans._state import RunState


@attrs.frozen
class RunAdmission:
    """What admission needs to know of one run: its state, the roles the host is
    launching (not yet `starting` in the state) and each role's directory key (by
    default the normalised cwd of its proposal; a host passes resolved real paths)."""

    state: RunState
    launching: frozenset[str] = frozenset()
    cwd_keys: Mapping[str, str] = attrs.field(factory=dict)

    def key(self, role: str) -> str | None:
        if role in self.cwd_keys:
            return self.cwd_keys[role]
        spec = self.state.proposal.role(role)
        return normalize_cwd(spec.cwd) if spec is not None else None

    def busy(self) -> tuple[str, ...]:
        """The roles that hold a slot: live in the state, or being launched."""
        return tuple(
            r.name
            for r in self.state.roles
            if r.status in LIVE_ROLE_STATES or r.name in self.launching
        )

    def ready(self) -> tuple[str, ...]:
        """Queued roles whose dependencies all completed, in declaration order (Rule 3)."""
        if self.state.status != "running":
            return ()
        done = {r.name for r in self.state.roles if r.status == "completed"}
        out: list[str] = []
        for role in self.state.roles:
            spec = self.state.proposal.role(role.name)
            if (
                role.status == "queued"
                and role.name not in self.launching
                and spec is not None
                and set(spec.depends_on) <= done
            ):
                out.append(role.name)
        return tuple(out)


@attrs.frozen
class Admitted:
    """One launch admission decides: role `role` of run `run_id`."""

    run_id: str
    role: str


def admit(
    runs: Sequence[RunAdmission], max_concurrent: int, *, after: str | None = None
) -> tuple[Admitted, ...]:
    """The (run, role) pairs to launch now (see the module's rules). `after`: the run
    id admitted last on this host (fairness, Rule 4); None starts at the first run in
    run-id order."""
    host_busy = 0
    used: set[str] = set()
    for run in runs:
        for name in run.busy():
            host_busy += 1
            key = run.key(name)
            if key is not None:
                used.add(key)
    ordered = sorted(runs, key=lambda r: r.state.run_id)
    if after is not None:
        later = [r for r in ordered if r.state.run_id > after]
        ordered = later + [r for r in ordered if r.state.run_id <= after]
    queues = {r.state.run_id: list(r.ready()) for r in ordered}
    free = {r.state.run_id: r.state.max_concurrent - len(r.busy()) for r in ordered}
    out: list[Admitted] = []
    progress = True
    while progress and host_busy + len(out) < max_concurrent:
        progress = False
        for run in ordered:
            if host_busy + len(out) >= max_concurrent:
                break
            run_id = run.state.run_id
            queue = queues[run_id]
            if free[run_id] <= 0:
                continue
            while queue:
                role = queue.pop(0)
                key = run.key(role)
                if key is not None and key in used:
                    continue  # its directory is busy: not this tick (Rule 2)
                if key is not None:
                    used.add(key)
                free[run_id] -= 1
                out.append(Admitted(run_id, role))
                progress = True
                break
    return tuple(out)
