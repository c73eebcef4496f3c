"""Shared pytest configuration: hypothesis profiles and common fixtures.

Profiles: `ci` (bounded, the default under CI=1 or `make test`), `thorough` (local runs and
benchmarks), `dev` (quick). Choose with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "dev",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
pytest_plugins = ["support.codex", "support.claude"]


def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    """Under MARKERTOOLS_REQUIRE_REAL=1 (`make test`, CI) a test that would skip for want
    of a real part (PostgreSQL, the Codex CLI, Claude Code, Chromium) fails instead: they never pass by skipping."""
    import pytest as _pytest

    if os.environ.get("MARKERTOOLS_REQUIRE_REAL") != "1" or call.excinfo is None:
        return None
    if call.excinfo.errisinstance(_pytest.skip.Exception):
        reason = str(call.excinfo.value)
        real = ("MARKERTOOLS_PG_DSN", "MARKERTOOLS_CODEX_BIN", "MARKERTOOLS_CLAUDE_BIN", "MARKERTOOLS_CHROMIUM_BIN")
        if any(k in reason for k in real):
            call.excinfo = None
            return _make_failure(item, call, reason)
    return None


def _make_failure(item, call, reason):  # type: ignore[no-untyped-def]
    from _pytest.reports import TestReport

    report = TestReport.from_item_and_call(item, call)
    report.outcome = "failed"
    report.longrepr = f"MARKERTOOLS_REQUIRE_REAL=1 but a real part is missing: {reason}"
    return report
