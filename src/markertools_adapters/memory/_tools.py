# Owns: the in-memory reference of the same-turn tool ports, as a mixin of MemoryStore:
# CallLedger (per-turn use of each kind, TOL-4; follow-ups held until the turn's report,
# TOL-7) and TaskTokenStore (token hashes, TOL-3). Operates on `self._state` under its
# lock.
#
# Invariants:
#   Rule 1: record_turn_use reads and writes under the lock: concurrent calls of one kind
#           get distinct positions.
#   Rule 2: insert_task_token checks the task is running and stores the hash under one
#           hold of the lock; the secret never reaches this store.
#   Rule 3: tokens are revoked under the lock of any change that takes the task out of
#           running (`revoke_left_running`, called by every task write of the store).
from __future__ import annotations

from collections.abc import Mapping

import attrs

from markertools import InvalidArgument, StoredToken
from markertools_adapters.memory._state import MemoryState, release_held


class ToolsMixin:
    _state: MemoryState

    # ---- CallLedger ----------------------------------------------------------------------

    def turn_usage(self, task_id: str, turn: int) -> Mapping[str, int]:
        with self._state.lock:
            return {
                kind: n
                for (t, u, kind), n in self._state.turn_uses.items()
                if t == task_id and u == turn
            }

    def record_turn_use(self, task_id: str, turn: int, kind: str) -> int:
        with self._state.lock:
            key = (task_id, turn, kind)
            count = self._state.turn_uses.get(key, 0) + 1
            self._state.turn_uses[key] = count
            return count

    def hold_followup(self, task_id: str, turn: int, text: str) -> None:
        with self._state.lock:
            self._state.held_followups.append((task_id, turn, text))

    def release_held_followups(self, task_id: str) -> tuple[str, ...]:
        return release_held(self._state, task_id)

    # ---- TaskTokenStore ------------------------------------------------------------------

    def insert_task_token(self, token_hash: str, task_id: str, expires_at: float) -> bool:
        with self._state.lock:
            task = self._state.tasks.get(task_id)
            if task is None or task.status != "running":
                return False
            if token_hash in self._state.tokens:
                raise InvalidArgument("a token with this hash is stored already")
            self._state.tokens[token_hash] = StoredToken(token_hash, task_id, float(expires_at))
            return True

    def task_token(self, token_hash: str) -> StoredToken | None:
        with self._state.lock:
            return self._state.tokens.get(token_hash)

    def revoke_task_tokens(self, task_id: str) -> int:
        with self._state.lock:
            revoked = 0
            for key, token in self._state.tokens.items():
                if token.task_id == task_id and not token.revoked:
                    self._state.tokens[key] = attrs.evolve(token, revoked=True)
                    revoked += 1
            return revoked
