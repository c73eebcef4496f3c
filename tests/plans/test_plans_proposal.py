"""Proposal and host-settings validation (docs/rules.md PLN: PLN-1, 2, 3, 4, 10)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.paths import REPO
from support.strategies.plans import (
    DELETE,
    cyclic_graphs,
    dags,
    edit,
    graph_proposal,
    is_edge,
    json_values,
    proposal_dict,
    role_dict,
    valid,
)

from markertools.plans import (
    HostSettings,
    NotJson,
    Proposal,
    QuotaPolicy,
    Role,
    Supervision,
    is_full_access,
    normalize_cwd,
    proposal_to_json,
    validate_host_settings,
    validate_proposal,
    validate_proposal_text,
)
from markertools.text.catalog import CATALOG

EXAMPLES = REPO / "examples" / "plans"
CONTROL = (
    "must not contain control characters (line breaks, tabs, escapes, bidi controls): "
    "found {char} at character {index}"
)


def issues(raw: Any, **kw: Any) -> list[tuple[str, str]]:
    check = validate_proposal(raw, **kw)
    return [(i.path, i.message.render("en")) for i in check.issues]


def only_issue(raw: Any, **kw: Any) -> tuple[str, str]:
    got = issues(raw, **kw)
    assert len(got) == 1, got
    return got[0]


# ---- PLN-1: the proposal ---------------------------------------------------------


@pytest.mark.rule("PLN-1", "PLN-2", "PLN-4")
def test_seed_example_is_valid_and_structured() -> None:
    text = (EXAMPLES / "seed.json").read_text(encoding="utf-8")
    check = validate_proposal_text(text)
    assert check.valid and check.issues == ()
    assert check.proposal == Proposal(
        goal="完成当前模块修复并验证",
        plan=json.loads(text)["plan"],
        workers=(
            Role(
                name="reader",
                backend="codex",
                cwd="C:\\work\\project",
                role="只读定位；不得修改文件",
                instruction="找出故障位置及最小修复建议，完成后结束本轮",
                sandbox="read-only",
            ),
        ),
        quota=QuotaPolicy(25, "codex", 10080),
        max_turns=12,
        timeout_ms=1_800_000,
        supervision=Supervision(60_000, 2, 8),
        allowed_models=(),
    )


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.json")))
def test_examples_valid_exactly_when_not_named_invalid(name: str) -> None:
    check = validate_proposal_text((EXAMPLES / name).read_text(encoding="utf-8"))
    assert check.valid is (not name.startswith("invalid"))
    assert bool(check.issues) is name.startswith("invalid")


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize(
    "field", ["goal", "plan", "workers", "quota", "maxTurns", "timeoutMs", "supervision"]
)
def test_required_top_level_fields(field: str) -> None:
    assert only_issue(edit(proposal_dict(), field, DELETE)) == (
        f"$.{field}",
        "required field is missing",
    )
    assert only_issue(edit(proposal_dict(), field, None)) == (
        f"$.{field}",
        "required field is null",
    )


@pytest.mark.rule("PLN-1")
def test_allowed_models_optional_and_strings() -> None:
    assert valid(edit(proposal_dict(), "allowedModels", DELETE)).allowed_models == ()
    assert valid(edit(proposal_dict(), "allowedModels", None)).allowed_models == ()
    assert valid(edit(proposal_dict(), "allowedModels", ["a", "b"])).allowed_models == ("a", "b")
    assert only_issue(edit(proposal_dict(), "allowedModels", ["a", 3])) == (
        "$.allowedModels[1]",
        "expected a string, got a number",
    )
    assert only_issue(edit(proposal_dict(), "allowedModels", ["a", "a"]))[0] == "$.allowedModels[1]"
    assert (
        only_issue(edit(proposal_dict(), "allowedModels", "gpt"))[1]
        == "expected an array, got a string"
    )


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("count", [0, 13])
def test_worker_count_out_of_range(count: int) -> None:
    workers = [role_dict(f"w{i}") for i in range(count)]
    assert only_issue(proposal_dict(workers)) == (
        "$.workers",
        f"must hold 1 to 12 items, got {count}",
    )


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("count", [1, 12])
def test_worker_count_in_range(count: int) -> None:
    assert len(valid(proposal_dict([role_dict(f"w{i}") for i in range(count)])).workers) == count


# every integer range of PLN-1/2/4: (path in the document, low, high or None)
INT_RANGES = [
    ("maxTurns", 1, 200),
    ("timeoutMs", 1, 7_200_000),
    ("supervision.decisionTimeoutMs", 1000, 600_000),
    ("supervision.maxDecisionRetries", 0, 5),
    ("supervision.maxTotalReminders", 0, 30),
    ("quota.windowMinutes", 1, None),
]


@pytest.mark.rule("PLN-1", "PLN-4")
@pytest.mark.parametrize(("path", "lo", "hi"), INT_RANGES)
def test_integer_ranges_inclusive(path: str, lo: int, hi: int | None) -> None:
    jpath = "$." + path
    for ok in [lo, float(lo)] + ([hi, float(hi)] if hi is not None else [10**9]):
        check = validate_proposal(edit(proposal_dict(), path, ok))
        assert check.valid, (ok, check.issues)
    expected_lo = (
        f"must be between {lo} and {hi}, got {lo - 1}"
        if hi is not None
        else f"must be at least {lo}, got {lo - 1}"
    )
    assert only_issue(edit(proposal_dict(), path, lo - 1)) == (jpath, expected_lo)
    if hi is not None:
        assert only_issue(edit(proposal_dict(), path, hi + 1)) == (
            jpath,
            f"must be between {lo} and {hi}, got {hi + 1}",
        )


@pytest.mark.rule("PLN-1", "PLN-4")
@pytest.mark.parametrize("path", [p for p, _, _ in INT_RANGES])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "expected an integer, got a boolean"),
        (False, "expected an integer, got a boolean"),
        (2.5, "expected an integer, got 2.5"),
        ("5", "expected an integer, got a string"),
        ([5], "expected an integer, got an array"),
        ({"n": 5}, "expected an integer, got an object"),
    ],
)
def test_integer_fields_strict_types(path: str, value: Any, message: str) -> None:
    assert only_issue(edit(proposal_dict(), path, value)) == ("$." + path, message)


@pytest.mark.rule("PLN-1", "PLN-4")
def test_integral_float_becomes_int() -> None:
    p = valid(edit(edit(proposal_dict(), "maxTurns", 7.0), "supervision.maxDecisionRetries", 0.0))
    assert p.max_turns == 7 and type(p.max_turns) is int
    assert (
        p.supervision.max_decision_retries == 0 and type(p.supervision.max_decision_retries) is int
    )


@pytest.mark.rule("PLN-4")
def test_quota_fields() -> None:
    for ok in [0, 100, 0.5, 99.9, None]:
        assert (
            valid(edit(proposal_dict(), "quota.stopAtLeftPercent", ok)).quota.stop_at_left_percent
            == ok
        )
    assert valid(edit(proposal_dict(), "quota", {})).quota == QuotaPolicy(None, None, None)
    assert only_issue(edit(proposal_dict(), "quota.stopAtLeftPercent", -0.1)) == (
        "$.quota.stopAtLeftPercent",
        "must be between 0 and 100, got -0.1",
    )
    assert (
        only_issue(edit(proposal_dict(), "quota.stopAtLeftPercent", 100.5))[0]
        == "$.quota.stopAtLeftPercent"
    )
    assert (
        only_issue(edit(proposal_dict(), "quota.stopAtLeftPercent", True))[1]
        == "expected a number, got a boolean"
    )
    assert (
        only_issue(edit(proposal_dict(), "quota.bucket", " "))[1]
        == "must contain a non-whitespace character"
    )
    assert only_issue(edit(proposal_dict(), "quota", None)) == ("$.quota", "required field is null")


@pytest.mark.rule("PLN-4")
@pytest.mark.parametrize("field", ["decisionTimeoutMs", "maxDecisionRetries", "maxTotalReminders"])
def test_supervision_fields_required(field: str) -> None:
    assert only_issue(edit(proposal_dict(), f"supervision.{field}", DELETE)) == (
        f"$.supervision.{field}",
        "required field is missing",
    )


@pytest.mark.rule("PLN-1")
def test_goal_and_plan_must_be_non_blank_strings() -> None:
    assert only_issue(edit(proposal_dict(), "goal", " \n\t")) == (
        "$.goal",
        "must contain a non-whitespace character",
    )
    assert only_issue(edit(proposal_dict(), "plan", 5)) == (
        "$.plan",
        "expected a string, got a number",
    )


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("value", [[], "x", 3, None, True])
def test_document_must_be_an_object(value: Any) -> None:
    path, message = only_issue(value)
    assert path == "$" and message.startswith("expected an object, got ")


# ---- unknown fields, duplicates, numbers (our strictness) --------------------------


@pytest.mark.rule("PLN-1", "PLN-2")
@pytest.mark.parametrize(
    ("path", "key", "hint"),
    [
        ("", "maxturns", "maxTurns"),
        ("", "workerz", "workers"),
        ("", "owner", None),
        ("workers.0.", "dependOn", "dependsOn"),
        ("workers.0.", "existingThreadID", "existingThreadId"),
        ("workers.0.", "sandBox", "sandbox"),
        ("quota.", "stopAtLeft", "stopAtLeftPercent"),
        ("supervision.", "maxRetries", "maxDecisionRetries"),
        ("supervision.", "zzz", None),
    ],
)
def test_unknown_fields_are_errors_with_hint(path: str, key: str, hint: str | None) -> None:
    raw = edit(proposal_dict(), path + key, 1)
    jpath = "$." + (path.replace(".0.", "[0].") if path else "") + key
    message = f"unknown field '{key}'" + (f"; did you mean '{hint}'?" if hint else "")
    got = issues(raw)
    assert (jpath, message) in got
    assert validate_proposal(raw).proposal is None


@pytest.mark.rule("PLN-1")
def test_odd_keys_are_quoted_in_paths() -> None:
    assert only_issue(edit(proposal_dict(), "two words", 1)) == (
        "$['two words']",
        "unknown field 'two words'",
    )
    path, _ = only_issue(edit(proposal_dict(), "line\nbreak", 1))
    assert "\n" not in path and "\\u000a" in path


@pytest.mark.rule("PLN-1")
def test_duplicate_keys_are_reported_at_their_path() -> None:
    text = json.dumps(proposal_dict()).replace('"maxTurns": 12', '"maxTurns": 12, "maxTurns": 13')
    assert [(i.path, i.message.render()) for i in validate_proposal_text(text).issues] == [
        ("$.maxTurns", "key 'maxTurns' appears more than once")
    ]


@pytest.mark.rule("PLN-1")
def test_unrepresentable_numbers_are_reported_not_raised() -> None:
    text = json.dumps(proposal_dict()).replace('"maxTurns": 12', '"maxTurns": 1e400')
    got = [(i.path, i.message.render()) for i in validate_proposal_text(text).issues]
    assert got == [
        ("$.maxTurns", "number 1e400 is out of range (overflows or has more than 30 digits)")
    ]
    text = json.dumps(proposal_dict()).replace('"maxTurns": 12', '"maxTurns": ' + "9" * 5000)
    got = [(i.path, i.message.render()) for i in validate_proposal_text(text).issues]
    assert got[0][0] == "$.maxTurns" and "out of range" in got[0][1]


@pytest.mark.rule("PLN-1")
@pytest.mark.parametrize("text", ["", "{", '{"a": NaN}', '{"a": Infinity}', "[" * 100_000, "{} x"])
def test_not_json_raises_notjson_only(text: str) -> None:
    with pytest.raises(NotJson):
        validate_proposal_text(text)


@pytest.mark.rule("PLN-1", "PLN-2", "PLN-4")
@given(json_values)
def test_validation_never_raises_on_any_json_value(value: Any) -> None:
    check = validate_proposal(value)
    assert check.valid is (check.proposal is not None)
    assert check.proposal is not None or check.issues
    for issue in check.issues:
        assert issue.path.startswith("$")
        assert "\n" not in issue.render()


@pytest.mark.rule("PLN-1", "PLN-2")
@given(
    st.dictionaries(
        st.sampled_from(list(proposal_dict()) + list(role_dict("x"))), json_values, max_size=8
    )
)
def test_validation_never_raises_on_mangled_proposals(mangle: dict[str, Any]) -> None:
    raw = proposal_dict()
    raw.update({k: v for k, v in mangle.items() if k in raw})
    raw["workers"] = [
        dict(role_dict("a"), **{k: v for k, v in mangle.items() if k in role_dict("x")})
    ]
    check = validate_proposal(raw)
    assert check.proposal is not None or check.issues


@pytest.mark.rule("PLN-1", "PLN-2", "PLN-3", "PLN-4")
def test_every_error_reported_at_once() -> None:
    raw = proposal_dict(
        [
            role_dict("reader", ["fixer"], sandbox="danger-full-access"),
            role_dict("fixer", ["reader", "ghost"], cwd="relative/dir"),
        ],
        maxTurns=0,
        timeoutMs=True,
    )
    assert issues(raw) == [
        (
            "$.workers[0].sandbox",
            "full-access sandbox 'danger-full-access' is refused; use 'read-only' or 'workspace-write'",
        ),
        (
            "$.workers[1].cwd",
            "cwd must be an absolute path ('/...' or a Windows drive path like 'C:\\...'), got 'relative/dir'",
        ),
        ("$.maxTurns", "must be between 1 and 200, got 0"),
        ("$.timeoutMs", "expected an integer, got a boolean"),
        ("$.workers[1].dependsOn[1]", "unknown role 'ghost'"),
        ("$.workers", "dependency cycle: reader -> fixer -> reader"),
    ]


@pytest.mark.rule("PLN-1")
def test_issue_flood_is_capped() -> None:
    raw = proposal_dict([role_dict(f"w{i}", **{f"x{j}": 1 for j in range(20)}) for i in range(12)])
    got = validate_proposal(raw).issues
    assert len(got) == 101
    assert got[-1].path == "$" and got[-1].message.render() == "140 more errors not shown"


# ---- PLN-2: roles ------------------------------------------------------------------


@pytest.mark.rule("PLN-2")
@pytest.mark.parametrize("field", ["name", "backend", "cwd", "role", "instruction", "sandbox"])
def test_role_required_fields(field: str) -> None:
    raw = proposal_dict([role_dict("a", **{})])
    del raw["workers"][0][field]
    assert only_issue(raw) == (f"$.workers[0].{field}", "required field is missing")


@pytest.mark.rule("PLN-2")
def test_role_optional_fields() -> None:
    p = valid(
        proposal_dict([role_dict("a", model="gpt-5.1", effort="high", existingThreadId="thr_1")])
    )
    assert p.workers[0].model == "gpt-5.1" and p.workers[0].effort == "high"
    assert p.workers[0].existing_thread_id == "thr_1" and p.workers[0].depends_on == ()
    assert only_issue(proposal_dict([role_dict("a", effort="turbo")]))[0] == "$.workers[0].effort"
    assert only_issue(proposal_dict([role_dict("a", model="")]))[0] == "$.workers[0].model"


@pytest.mark.rule("PLN-2")
def test_backend_enum() -> None:
    assert valid(proposal_dict([role_dict("a", backend="dsh")])).workers[0].backend == "dsh"
    assert only_issue(proposal_dict([role_dict("a", backend="Codex")])) == (
        "$.workers[0].backend",
        "must be one of 'codex', 'dsh', got 'Codex'",
    )


@pytest.mark.rule("PLN-2")
@pytest.mark.parametrize(
    "spelling",
    [
        "danger-full-access",
        "DANGER-FULL-ACCESS",
        "danger_full_access",
        "dangerFullAccess",
        "full-access",
        "full_access",
        "FullAccess",
        "full",
        "danger",
        " danger-full-access ",
        "yolo",
        "none",
        "off",
        "bypass",
        "unrestricted",
        "no-sandbox",
    ],
)
def test_full_access_sandboxes_refused(spelling: str) -> None:
    assert is_full_access(spelling)
    path, message = only_issue(proposal_dict([role_dict("a", sandbox=spelling)]))
    assert path == "$.workers[0].sandbox"
    assert message.startswith("full-access sandbox") and "is refused" in message


@pytest.mark.rule("PLN-2")
@pytest.mark.parametrize("sandbox", ["read-only", "workspace-write"])
def test_allowed_sandboxes(sandbox: str) -> None:
    assert not is_full_access(sandbox)
    assert valid(proposal_dict([role_dict("a", sandbox=sandbox)])).workers[0].sandbox == sandbox


@pytest.mark.rule("PLN-2")
def test_other_sandbox_values_refused_as_enum() -> None:
    assert only_issue(proposal_dict([role_dict("a", sandbox="readonly")])) == (
        "$.workers[0].sandbox",
        "must be one of 'read-only', 'workspace-write', got 'readonly'",
    )


@pytest.mark.rule("PLN-2")
@pytest.mark.parametrize(
    "cwd",
    [
        "/",
        "/work/project",
        "/work/project/",
        "//srv/x",
        "C:\\work\\project",
        "c:\\",
        "D:/work/project",
        "C:\\work/mixed",
    ],
)
def test_absolute_cwd_forms_accepted(cwd: str) -> None:
    assert valid(proposal_dict([role_dict("a", cwd=cwd)])).workers[0].cwd == cwd


@pytest.mark.rule("PLN-2")
@pytest.mark.parametrize(
    ("cwd", "fragment"),
    [
        ("work/project", "absolute"),
        ("./work", "absolute"),
        ("~/work", "absolute"),
        ("C:", "absolute"),
        ("C:work", "absolute"),
        ("\\\\server\\share", "absolute"),
        ("\\work", "absolute"),
        ("CC:\\work", "absolute"),
        ("/work/../etc", "'..'"),
        ("/work/./x", "'..'"),
        ("C:\\work\\..\\x", "'..'"),
        ("/work/\x00x", "control"),
        ("/work\nx", "control"),
        ("", "non-whitespace"),
    ],
)
def test_bad_cwd_refused(cwd: str, fragment: str) -> None:
    path, message = only_issue(proposal_dict([role_dict("a", cwd=cwd)]))
    assert path == "$.workers[0].cwd" and fragment in message


@pytest.mark.rule("PLN-2")
def test_role_names_unique() -> None:
    raw = proposal_dict([role_dict("a"), role_dict("b"), role_dict("a")])
    assert only_issue(raw) == ("$.workers[2].name", "role name 'a' is already used by $.workers[0]")


@pytest.mark.rule("PLN-2")
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (" a", "role name ' a' must not have surrounding whitespace"),
        ("a ", "role name 'a ' must not have surrounding whitespace"),
        ("a\tb", CONTROL.format(char="U+0009", index=2)),
        ("\x1b[31mred", CONTROL.format(char="U+001B", index=1)),
    ],
)
def test_role_name_form(name: str, reason: str) -> None:
    assert only_issue(proposal_dict([role_dict(name)])) == ("$.workers[0].name", reason)


@pytest.mark.rule("PLN-2")
def test_existing_thread_only_for_codex() -> None:
    assert only_issue(proposal_dict([role_dict("a", backend="dsh", existingThreadId="thr_1")])) == (
        "$.workers[0].existingThreadId",
        "existingThreadId is only allowed for codex roles (this role's backend is 'dsh')",
    )


@pytest.mark.rule("PLN-2")
def test_no_two_roles_name_the_same_thread() -> None:
    raw = proposal_dict(
        [role_dict("a", existingThreadId="thr_1"), role_dict("b", existingThreadId="thr_1")]
    )
    assert only_issue(raw) == (
        "$.workers[1].existingThreadId",
        "thread 'thr_1' is already taken by role 'a'",
    )
    assert valid(
        proposal_dict(
            [role_dict("a", existingThreadId="t1"), role_dict("b", existingThreadId="t2")]
        )
    )


@pytest.mark.rule("PLN-2")
def test_thread_cwd_must_match_when_known() -> None:
    raw = proposal_dict([role_dict("a", cwd="C:\\work\\project", existingThreadId="thr_1")])
    assert validate_proposal(raw).valid  # unknown thread: checked at run time
    assert validate_proposal(raw, thread_cwds={"thr_1": "c:/Work/Project/"}).valid
    assert validate_proposal(raw, thread_cwds={"other": "D:\\x"}).valid
    assert only_issue(raw, thread_cwds={"thr_1": "C:\\work\\other"}) == (
        "$.workers[0].existingThreadId",
        "thread 'thr_1' was recorded in 'C:\\work\\other', not in this role's cwd 'C:\\work\\project'",
    )
    posix = proposal_dict([role_dict("a", cwd="/work/Project", existingThreadId="t")])
    assert validate_proposal(posix, thread_cwds={"t": "/work//Project/"}).valid
    assert not validate_proposal(
        posix, thread_cwds={"t": "/work/project"}
    ).valid  # POSIX is case-sensitive


@pytest.mark.rule("PLN-2")
def test_normalize_cwd() -> None:
    assert normalize_cwd("C:\\work\\project\\") == normalize_cwd("c:/WORK//project")
    assert normalize_cwd("C:\\") == "c:\\"
    assert normalize_cwd("/a//b/") == "/a/b" and normalize_cwd("/") == "/"
    assert normalize_cwd("/A") != normalize_cwd("/a")


# ---- PLN-3: dependencies ------------------------------------------------------------


@pytest.mark.rule("PLN-3")
def test_unknown_dependency_named_with_path() -> None:
    raw = proposal_dict([role_dict("reader"), role_dict("a"), role_dict("b", ["reader", "fixer"])])
    assert only_issue(raw) == ("$.workers[2].dependsOn[1]", "unknown role 'fixer'")


@pytest.mark.rule("PLN-3")
def test_dependency_list_entries() -> None:
    assert (
        only_issue(proposal_dict([role_dict("a"), role_dict("b", ["a", "a"])]))[0]
        == "$.workers[1].dependsOn[1]"
    )
    assert only_issue(proposal_dict([role_dict("a"), role_dict("b", ["a", 7])])) == (
        "$.workers[1].dependsOn[1]",
        "expected a string, got a number",
    )


@pytest.mark.rule("PLN-3")
def test_cycles_named() -> None:
    two = proposal_dict([role_dict("reader", ["fixer"]), role_dict("fixer", ["reader"])])
    assert only_issue(two) == ("$.workers", "dependency cycle: reader -> fixer -> reader")
    self_loop = proposal_dict([role_dict("a", ["a"])])
    assert only_issue(self_loop) == ("$.workers", "dependency cycle: a -> a")
    three = proposal_dict(
        [role_dict("x"), role_dict("c", ["b"]), role_dict("a", ["c"]), role_dict("b", ["a", "x"])]
    )
    assert only_issue(three) == ("$.workers", "dependency cycle: c -> a -> b -> c")
    both = proposal_dict([role_dict("a", ["b"]), role_dict("b", ["a"]), role_dict("c", ["c"])])
    assert issues(both) == [
        ("$.workers", "dependency cycle: a -> b -> a"),
        ("$.workers", "dependency cycle: c -> c"),
    ]


@pytest.mark.rule("PLN-3")
@given(dags())
def test_random_dags_are_valid(graph: tuple[list[str], dict[str, list[str]]]) -> None:
    order, deps = graph
    p = valid(graph_proposal(order, deps))
    assert p.role_names == tuple(order)


@pytest.mark.rule("PLN-3")
@given(cyclic_graphs())
def test_random_cyclic_graphs_rejected_naming_a_real_cycle(
    graph: tuple[list[str], dict[str, list[str]]],
) -> None:
    order, deps = graph
    check = validate_proposal(graph_proposal(order, deps))
    assert check.proposal is None
    cycles = [i.message for i in check.issues if i.message.key == "plan.cycle"]
    assert cycles and len(cycles) == len(check.issues)
    for m in cycles:
        walk = m.arg("roles")
        assert isinstance(walk, tuple) and len(walk) >= 2 and walk[0] == walk[-1]
        assert len(set(walk[:-1])) == len(walk) - 1  # a simple cycle
        for a, b in itertools.pairwise(walk):
            assert isinstance(a, str) and isinstance(b, str) and is_edge(deps, a, b)
        assert m.render() == "dependency cycle: " + " -> ".join(str(n) for n in walk)


# ---- round trip ---------------------------------------------------------------------


@pytest.mark.rule("PLN-1", "PLN-2")
@given(dags())
def test_proposal_json_round_trip(graph: tuple[list[str], dict[str, list[str]]]) -> None:
    order, deps = graph
    p = valid(graph_proposal(order, deps))
    again = valid(json.loads(json.dumps(_strip_nulls(proposal_to_json(p)))))
    assert again == p


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


# ---- PLN-10: host settings --------------------------------------------------------


@pytest.mark.rule("PLN-10")
def test_host_settings_defaults() -> None:
    check = validate_host_settings({})
    assert check.valid and check.settings == HostSettings(3, 30_000)
    assert check.settings.subagent_provider == "spawn"


@pytest.mark.rule("PLN-10")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"maxConcurrent": 1}, None),
        ({"maxConcurrent": 3.0}, None),
        ({"pollMs": 1000}, None),
        ({"pollMs": 10**9}, None),
        (
            {"stateDir": "/var/dots", "codexBin": "/usr/bin/codex", "subagentProvider": "spawn"},
            None,
        ),
        ({"maxConcurrent": 0}, ("$.maxConcurrent", "must be between 1 and 3, got 0")),
        ({"maxConcurrent": 4}, ("$.maxConcurrent", "must be between 1 and 3, got 4")),
        ({"maxConcurrent": True}, ("$.maxConcurrent", "expected an integer, got a boolean")),
        ({"pollMs": 999}, ("$.pollMs", "must be at least 1000, got 999")),
        ({"pollMs": 1500.5}, ("$.pollMs", "expected an integer, got 1500.5")),
        ({"pollMS": 1000}, ("$.pollMS", "unknown field 'pollMS'; did you mean 'pollMs'?")),
        ([], ("$", "expected an object, got an array")),
    ],
)
def test_host_settings_ranges(raw: Any, expected: tuple[str, str] | None) -> None:
    check = validate_host_settings(raw)
    if expected is None:
        assert check.valid and check.settings is not None
    else:
        assert check.settings is None
        assert [(i.path, i.message.render()) for i in check.issues] == [expected]


# ---- messages -----------------------------------------------------------------------


def test_every_plan_message_has_en_and_a_real_zh() -> None:
    keys = [k for k in CATALOG if k.startswith("plan.")]
    assert len(keys) > 50
    for key in keys:
        entry = CATALOG[key]
        assert entry.get("en") and entry.get("zh"), key
        if len(entry["en"]) > 12:
            assert entry["zh"] != entry["en"], key
            assert any("\u4e00" <= c <= "\u9fff" for c in entry["zh"]), key


@pytest.mark.rule("PLN-3")
def test_errors_render_in_chinese() -> None:
    check = validate_proposal(proposal_dict([role_dict("a", ["ghost"])]))
    assert [i.render("zh") for i in check.issues] == ["$.workers[0].dependsOn[0]: 未知角色 'ghost'"]
