"""Test helpers, one package (tests/ is on sys.path through tests/conftest.py, so tests
import them as `support.<name>`):

- `paths`: where the repository and the tests are;
- `codex` (a pytest plugin, loaded by tests/conftest.py: the real pinned Codex CLI
  against the offline fake model), `dots` (supervisor rigs), `terminal` (pty sessions);
- `postgres` (the throwaway server's schemas), `stateful` and `query_plans` (the SQL
  stores' state machine and index checks), `exactly_once` (TRN-9 rigs), `framing`
  (INJ-7 data framing checks);
- programs the tests start in processes of their own: `crash_delivery` (a delivery that
  SIGKILLs itself), `crash_finish` (a worker killed in the middle of finish_turn),
  `dots_host` (a supervisor to kill and restart), `fake_appserver` (a scripted
  `codex app-server`), `sqlite_workers` and `automation_race` (multiprocessing workers),
  `fake_docker/docker` (a `docker` on PATH);
- `strategies`: the hypothesis strategies and world builders, one module per area.
"""
