"""Boundaries of the plans ranges (issue 20), read from the one table the validation
uses (`RANGES`): PLN-1 (workers 1-12, maxTurns 1-200, timeoutMs 1-7,200,000), PLN-4
(decisionTimeoutMs 1000-600000, maxDecisionRetries 0-5, maxTotalReminders 0-30,
stopAtLeftPercent 0-100) and PLN-10 (maxConcurrent 1-3, pollMs at least 1000), each
at min-1, min, min+1, max-1, max and max+1, with the refusal's location (naming the
field) and text asserted word for word. PLN-10 also where the adapters apply it: the
CLI's option check, the run core (new_run, schedule) and the supervisor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from support.strategies.plans import edit, proposal_dict, role_dict

from markertools.plans import (
    RANGES,
    HostSettings,
    ScheduleError,
    new_run,
    schedule,
    validate_host_settings,
    validate_proposal,
)
from markertools_adapters.cli.cmd_dots import host_settings
from markertools_adapters.dots import Supervisor

# the rules' numbers; RANGES is what the validation reads
RULE_RANGES: dict[str, tuple[int, int | None]] = {
    "workers": (1, 12),
    "maxTurns": (1, 200),
    "timeoutMs": (1, 7_200_000),
    "decisionTimeoutMs": (1000, 600_000),
    "maxDecisionRetries": (0, 5),
    "maxTotalReminders": (0, 30),
    "stopAtLeftPercent": (0, 100),
    "maxConcurrent": (1, 3),
    "pollMs": (1000, None),
}
# proposal field -> (its path in the document, the attribute path of the parsed value)
PROPOSAL_FIELDS: dict[str, tuple[str, str]] = {
    "maxTurns": ("maxTurns", "max_turns"),
    "timeoutMs": ("timeoutMs", "timeout_ms"),
    "decisionTimeoutMs": ("supervision.decisionTimeoutMs", "supervision.decision_timeout_ms"),
    "maxDecisionRetries": ("supervision.maxDecisionRetries", "supervision.max_decision_retries"),
    "maxTotalReminders": ("supervision.maxTotalReminders", "supervision.max_total_reminders"),
    "stopAtLeftPercent": ("quota.stopAtLeftPercent", "quota.stop_at_left_percent"),
}


def _check_constant(name: str) -> tuple[int, int | None]:
    assert RANGES[name] == RULE_RANGES[name], name
    return RANGES[name]


def _edges(name: str) -> list[tuple[str, int]]:
    """(name, value) at min-1, min, min+1, max-1, max, max+1 of RANGES[name]."""
    low, high = RANGES[name]
    values = [low - 1, low, low + 1]
    if high is not None:
        values += [high - 1, high, high + 1]
    return [(name, v) for v in values]


def _id(case: tuple[str, int]) -> str:
    return f"{case[0]}={case[1]}"


def _expected_refusal(low: int, high: int | None, value: object) -> str | None:
    inside = value >= low and (high is None or value <= high)  # type: ignore[operator]
    if inside:
        return None
    if high is None:
        return f"must be at least {low}, got {value}"
    return f"must be between {low} and {high}, got {value}"


def _attr(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


# ---- PLN-1 / PLN-4: integer and number ranges of the proposal ---------------------------


PLN1_CASES = [c for name in ("maxTurns", "timeoutMs") for c in _edges(name)]
PLN4_CASES = [
    c
    for name in (
        "decisionTimeoutMs",
        "maxDecisionRetries",
        "maxTotalReminders",
        "stopAtLeftPercent",
    )
    for c in _edges(name)
]


def _check_proposal_range(name: str, value: int) -> None:
    low, high = _check_constant(name)
    path, attribute = PROPOSAL_FIELDS[name]
    check = validate_proposal(edit(proposal_dict(), path, value))
    refusal = _expected_refusal(low, high, value)
    if refusal is None:
        assert check.valid and check.issues == ()
        assert check.proposal is not None
        parsed = _attr(check.proposal, attribute)
        assert parsed == value
        assert type(parsed) is (float if name == "stopAtLeftPercent" else int)
    else:
        assert check.proposal is None
        issues = [(i.path, i.message.render("en")) for i in check.issues]
        assert issues == [(f"$.{path}", refusal)]


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("case", PLN1_CASES, ids=_id)
def test_proposal_limits_at_their_boundaries(case: tuple[str, int]) -> None:
    _check_proposal_range(*case)


@pytest.mark.rule("PLN-4")
@pytest.mark.parametrize("case", PLN4_CASES, ids=_id)
def test_supervision_and_quota_settings_at_their_boundaries(case: tuple[str, int]) -> None:
    _check_proposal_range(*case)


@pytest.mark.rule("PLN-4")
@pytest.mark.parametrize("value", [-0.001, 0.001, 99.999, 100.001])
def test_stop_at_left_percent_is_a_number_range_with_inclusive_ends(value: float) -> None:
    low, high = _check_constant("stopAtLeftPercent")
    check = validate_proposal(edit(proposal_dict(), "quota.stopAtLeftPercent", value))
    refusal = _expected_refusal(low, high, value)
    if refusal is None:
        assert check.proposal is not None
        assert check.proposal.quota.stop_at_left_percent == value
    else:
        issues = [(i.path, i.message.render("en")) for i in check.issues]
        assert issues == [("$.quota.stopAtLeftPercent", refusal)]


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("edge", ["low", "high"])
def test_worker_count_at_its_boundary(edge: str, delta: int) -> None:
    low, high = _check_constant("workers")
    assert high is not None
    count = (low if edge == "low" else high) + delta
    check = validate_proposal(proposal_dict([role_dict(f"w{i}") for i in range(count)]))
    if low <= count <= high:
        assert check.proposal is not None and len(check.proposal.workers) == count
        assert [w.name for w in check.proposal.workers] == [f"w{i}" for i in range(count)]
    else:
        assert check.proposal is None
        issues = [(i.path, i.message.render("en")) for i in check.issues]
        assert issues == [("$.workers", f"must hold {low} to {high} items, got {count}")]
        zh = check.issues[0].message.render("zh")
        assert zh == f"必须包含 {low} 到 {high} 项，实际为 {count} 项"


# ---- PLN-10: host settings ------------------------------------------------------------------


HOST_CASES = [*_edges("maxConcurrent"), *_edges("pollMs"), ("pollMs", 10**9)]


@pytest.mark.rule("PLN-10")
@pytest.mark.parametrize("case", HOST_CASES, ids=_id)
def test_host_settings_at_their_boundaries(case: tuple[str, int]) -> None:
    name, value = case
    low, high = _check_constant(name)
    check = validate_host_settings({name: value})
    refusal = _expected_refusal(low, high, value)
    if refusal is None:
        assert check.valid and check.settings is not None
        attribute = "max_concurrent" if name == "maxConcurrent" else "poll_ms"
        assert getattr(check.settings, attribute) == value
    else:
        assert check.settings is None
        assert [(i.path, i.message.render("en")) for i in check.issues] == [(f"$.{name}", refusal)]


@pytest.mark.rule("PLN-10")
@pytest.mark.parametrize("case", HOST_CASES, ids=_id)
def test_the_cli_options_refuse_outside_the_host_ranges(
    case: tuple[str, int], capsys: pytest.CaptureFixture[str]
) -> None:
    name, value = case
    low, high = _check_constant(name)
    given = {"maxConcurrent": 3, "pollMs": 30_000, name: value}
    refusal = _expected_refusal(low, high, value)
    if refusal is None:
        settings = host_settings(given["maxConcurrent"], given["pollMs"])
        assert (settings.max_concurrent, settings.poll_ms) == (
            given["maxConcurrent"],
            given["pollMs"],
        )
        assert capsys.readouterr().err == ""
    else:
        with pytest.raises(typer.Exit) as exited:
            host_settings(given["maxConcurrent"], given["pollMs"])
        assert exited.value.exit_code == 2
        option = "--max-concurrent" if name == "maxConcurrent" else "--poll-ms"
        assert capsys.readouterr().err == f"markertools: {option}: {refusal}\n"


@pytest.mark.rule("PLN-10")
@pytest.mark.parametrize("case", _edges("maxConcurrent"), ids=_id)
def test_the_run_core_refuses_max_concurrent_outside_its_range(case: tuple[str, int]) -> None:
    _, value = case
    low, high = _check_constant("maxConcurrent")
    check = validate_proposal(proposal_dict())
    assert check.proposal is not None
    proposal = check.proposal
    if _expected_refusal(low, high, value) is None:
        assert new_run("r1", proposal, 0.0, value).max_concurrent == value
        assert schedule(proposal, {}, (), value).start == ("reader",)
    else:
        text = f"maxConcurrent must be between {low} and {high}, got {value}"
        with pytest.raises(ValueError) as refused:
            new_run("r1", proposal, 0.0, value)
        assert str(refused.value) == text
        with pytest.raises(ScheduleError) as refused_schedule:
            schedule(proposal, {}, (), value)
        assert str(refused_schedule.value) == text


@pytest.mark.rule("PLN-10", "DOT-1")
@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (HostSettings(max_concurrent=0), "maxConcurrent must be between 1 and 3, got 0"),
        (HostSettings(max_concurrent=4), "maxConcurrent must be between 1 and 3, got 4"),
        (HostSettings(poll_ms=999), "pollMs must be at least 1000, got 999"),
    ],
    ids=["maxConcurrent=0", "maxConcurrent=4", "pollMs=999"],
)
def test_the_supervisor_refuses_host_settings_outside_their_ranges(
    tmp_path: Path, settings: HostSettings, reason: str
) -> None:
    # the library path checks PLN-10 too, at construction (not after two confirmations)
    with pytest.raises(ValueError) as raised:
        Supervisor(tmp_path / "state", settings=settings)
    assert str(raised.value) == f"host settings: {reason}"
    assert not (tmp_path / "state").exists()


@pytest.mark.rule("PLN-10", "DOT-1")
@pytest.mark.parametrize(
    "settings",
    [HostSettings(max_concurrent=1, poll_ms=1000), HostSettings(max_concurrent=3, poll_ms=10**9)],
)
def test_the_supervisor_takes_host_settings_at_their_limits(
    tmp_path: Path, settings: HostSettings
) -> None:
    assert Supervisor(tmp_path / "state", settings=settings).settings == settings
