"""The help of `markertools` and what it says about options, through the installed
console script and typer's runner:

- `deliver --help` names the deadline's default (TRN-11) and the executors;
- every command's help wraps its paragraphs cleanly, never in mid-sentence;
- an unknown option suggests only options close to what was typed, on every command;
- help names value types in words, never `<str>`; typer's shell completion works.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
from support.cli import EXE, cli, one_line_failure
from typer.testing import CliRunner

from markertools import DEFAULT_DELIVERY_DEADLINE
from markertools_adapters.cli import app
from markertools_adapters.cli._app import close_options
from markertools_adapters.cli._main import register

MARKERTOOLS = str(EXE)
runner = CliRunner()


# ---- the deadline's default ---------------------------------------------------------------


def test_deliver_help_names_the_deadline_default() -> None:
    result = runner.invoke(app, ["deliver", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert f"default {DEFAULT_DELIVERY_DEADLINE:g}, the library's default; none = no bound" in text


# ---- help text wraps cleanly --------------------------------------------------------


def every_command() -> list[list[str]]:
    register(None)
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def broken_wraps(help_text: str, width: int) -> list[tuple[str, str]]:
    """Pairs of lines of the description (above the first box) where the next line's
    first word would have fitted on the line before: a line break in mid-sentence."""
    description = help_text.split("╭")[0].splitlines()
    pairs = []
    for line, after in itertools.pairwise(description):
        if (
            line.strip()
            and after.strip()
            and not line.lstrip().startswith("Usage:")
            and len(line.strip()) + 1 + len(after.split()[0]) <= width - 4
        ):
            pairs.append((line.strip(), after.strip()))
    return pairs


def test_deliver_help_has_no_line_break_in_mid_sentence() -> None:
    """Issue 24: the second paragraph broke after "(with --json," at any width."""
    done = subprocess.run(
        [str(EXE), "deliver", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        check=True,
    )
    assert broken_wraps(done.stdout, 80) == []
    text = " ".join(done.stdout.split())
    assert "(with --json, the `deliver --json` document of docs/cli.md)" in text


@pytest.mark.parametrize("width", [80, 120])
def test_no_command_help_breaks_a_line_in_mid_sentence(width: int) -> None:
    for path in every_command():
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(width)})
        assert result.exit_code == 0, (path, result.output)
        assert broken_wraps(result.stdout, width) == [], path


def test_help_paragraphs_are_joined_but_a_b_marked_one_is_kept() -> None:
    from markertools_adapters.cli._app import reflowed

    text = "Summary line.\n\nA paragraph that\nwas wrapped by hand.\n\n\bkept\n  as written"
    assert reflowed(text) == (
        "Summary line.\n\nA paragraph that was wrapped by hand.\n\n\bkept\n  as written"
    )
    assert reflowed(None) is None


# ---- unknown options ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("--jsn", "(Possible options: --json)"),
        ("--jason", "(Possible options: --json)"),
        ("--locle", "(Possible options: --locale)"),
        ("--codex", "(Possible options: --codex-events, --codex-rollout)"),
        ("--rollout", "(Possible options: --codex-rollout)"),
        ("--keep", None),  # click offered --help
        ("--version", None),  # click offered --json
        ("--codex-bin", None),  # click offered --codex-events, --codex-rollout
        ("--turn-id", None),  # click offered --turn, another option altogether
    ],
)
def test_an_unknown_option_on_parse_suggests_only_close_options(
    tmp_path: Path, typed: str, suggested: str | None
) -> None:
    turn = tmp_path / "t.md"
    turn.write_text("no blocks\n")
    line = one_line_failure(cli("parse", typed, str(turn)), f"No such option: {typed}")
    if suggested is None:
        assert "Possible options" not in line
    else:
        assert suggested in line


def test_every_command_suggests_its_own_misspelt_options_and_nothing_unrelated() -> None:
    import click

    for path in every_command():
        command = typer.main.get_command(app)
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        options = [
            o
            for p in command.get_params(click.Context(command))
            for o in p.opts
            if o.startswith("--") and len(o) > 6
        ]
        for option in options:
            typo = option[:3] + option[4:]  # one letter dropped
            assert option in close_options(typo, options), (path, typo)
        assert close_options("--zqxjvw", options) == [], path


# ---- value types in words; shell completion ------------------------------------------


@pytest.mark.parametrize(
    "command",
    [[], ["deliver"], ["parse"], ["world", "load"], ["world", "dump"], ["plan", "validate"],
     ["prompt"], ["demo"], ["guide"], ["dots", "run"], ["dots", "serve"]],
)
def test_help_names_value_types_in_words(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    for bracketed in ("<str>", "<bool>", "<path>", "<int>", "<float>"):
        assert bracketed not in result.stdout, (command, bracketed)


def test_deliver_help_agrees_with_the_readme_on_executors() -> None:
    text = " ".join(runner.invoke(app, ["deliver", "--help"]).stdout.split())
    assert "noop|local|docker" in text
    for name in ("noop", "local", "docker"):
        assert name in text


def test_shell_completion_works() -> None:
    env = dict(
        os.environ,
        _MARKERTOOLS_COMPLETE="complete_bash",
        COMP_WORDS="markertools del",
        COMP_CWORD="1",
    )
    run = subprocess.run([MARKERTOOLS], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "deliver" in run.stdout.split()
