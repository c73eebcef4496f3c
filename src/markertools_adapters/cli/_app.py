# Owns: the typer application objects and the helpers every command module shares:
# a usage failure (one line on stderr, exit 2, no traceback), the global
# options (`--version`, `--debug`, typer's shell completion), help that names value
# types in words (TEXT, PATH, INTEGER, a choice list; nothing for a flag), puts a number
# option's range in its help text (so no option name is cut at 80 columns) and wraps every
# paragraph to the terminal, and "Possible options" for an unknown option only when one
# is close to what was typed (every command and group is built from these classes).
# Commands live in sibling modules; each only parses options, calls library
# functions and prints (fastapi-cli style); the input and output helpers they share
# (reading files, opening stores, printing JSON) are in `_io.py`.
from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Final, NoReturn

import typer
import typer.core

from markertools_adapters.errors import MarkertoolsError

_TYPE_WORDS: Final[dict[str, str]] = {
    "text": "TEXT",
    "integer": "INTEGER",
    "float": "NUMBER",
    "path": "PATH",
    "filename": "FILE",
    "boolean": "BOOLEAN",
    "uuid": "UUID",
}
_ANNOTATION_WORDS: Final[dict[Any, str]] = {
    str: "TEXT",
    int: "INTEGER",
    float: "NUMBER",
    bool: "BOOLEAN",
}
_STATE: dict[str, bool] = {"debug": False}


def type_words(param: Any) -> str:
    """How help shows the value `param` takes: an option's metavar when one was given
    (an argument's metavar is already its name in help), nothing for a flag, else the
    type in words ("TEXT", "PATH", "a|b|c"), "..." when repeated."""
    is_argument = getattr(param, "param_type_name", "") == "argument"
    if getattr(param, "metavar", None) is not None and not is_argument:
        return str(param.metavar)
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    desc = getattr(param, "type_descriptor", None)  # typer >= 0.22
    if desc is not None:
        if desc.is_choice:
            words = "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
        elif desc.is_path:
            words = "PATH"
        else:
            annotation = desc.annotation
            words = (
                _ANNOTATION_WORDS.get(annotation)
                or getattr(annotation, "__name__", "value").upper()
            )
        repeated = bool(desc.is_list)
    else:  # older typer: click parameter types
        kind = getattr(param, "type", None)
        choices = getattr(kind, "choices", None)
        if choices:
            words = "|".join(str(c) for c in choices)
        else:
            words = _TYPE_WORDS.get(str(getattr(kind, "name", "")).lower(), "VALUE")
        repeated = bool(getattr(param, "multiple", False))
    if repeated or getattr(param, "nargs", 1) != 1:
        words += "..."
    return words


def _with_words(params: list[Any]) -> list[Any]:
    for param in params:
        _range_in_help(param)
        words = type_words(param)
        param.display_type_rich = lambda ctx, _w=words: _w  # instance override, this command only
    return params


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def range_words(low: Any, high: Any) -> str:
    """A number range in words: "1 to 16", "at least 0.1", "at most 5"."""
    if low is not None and high is not None:
        return f"{_number(low)} to {_number(high)}"
    return f"at least {_number(low)}" if low is not None else f"at most {_number(high)}"


def _range_in_help(param: Any) -> None:
    """A number option's range goes into its help, in words, instead of the type column
    (typer draws `INTEGER [1<=x<=16]` there, which squeezes the option names until rich
    cuts them at 80 columns). Help that already names both ends is kept as written."""
    if getattr(param, "_range_in_help", False):
        return
    param._range_in_help = True
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if (low is None and high is None) or not callable(
        getattr(param, "_get_number_range_help_str", None)
    ):
        return
    param._get_number_range_help_str = lambda: None  # instance override, this option only
    help_text = str(getattr(param, "help", None) or "")
    ends = [_number(v) for v in (low, high) if v is not None]
    if all(end in help_text for end in ends):
        return
    words = range_words(low, high)
    param.help = f"{help_text.rstrip('.')} ({words})." if help_text else f"{words[0].upper()}{words[1:]}."


def reflowed(help_text: str | None) -> str | None:
    """A command's help with each paragraph on one line, so rich wraps it to the terminal
    (typer keeps the line breaks of a docstring's later paragraphs, which then break in
    mid-sentence). Paragraphs are separated by a blank line; one starting with click's
    `\\b` marker, and anything after `\\f`, is kept as written."""
    if not help_text:
        return help_text
    text, cut, rest = inspect.cleandoc(help_text).partition("\f")
    paragraphs = [
        p if p.startswith("\b") else " ".join(p.split()) for p in text.strip().split("\n\n")
    ]
    return "\n\n".join(paragraphs) + cut + rest


def close_options(typed: str, options: Iterable[str]) -> list[str]:
    """The options worth suggesting for an unknown `typed` one: a likely typo (at most one
    edit for short names, two for longer ones, a swap of two letters counting as one),
    an option `typed` begins (`--codex` -> `--codex-events`), or one that has `typed` as
    a whole word (`--events` -> `--codex-events`). Nothing is suggested when nothing is
    close: click's own guess offers unrelated options (`--keep` -> `--help`)."""
    word = typed.lstrip("-").lower()
    if not word:
        return []
    found = []
    for option in options:
        name = option.lstrip("-").lower()
        limit = 1 if len(word) <= 4 else 2
        if (
            _edits(word, name) <= limit
            or (len(word) >= 3 and name.startswith(word))
            or word in name.split("-")
        ):
            found.append(option)
    return sorted(found)


def _edits(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps
    of two neighbouring letters, each one edit."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, previous2[j - 2] + 1)
            row.append(cost)
        previous2, previous = previous, row
    return previous[-1]


def _long_options(command: Any, ctx: Any) -> list[str]:
    """Every long option of `command`, `--help` included."""
    names: list[str] = []
    for param in command.get_params(ctx):
        opts = (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
        names += [o for o in opts if o.startswith("--")]
    return names


class WordsCommand(typer.core.TyperCommand):
    """A typer command whose help names value types in words (see `type_words`), wraps
    its paragraphs cleanly (`reflowed`) and suggests only close options (`close_options`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = reflowed(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        return _with_words(list(super().get_params(ctx)))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return _close_suggestions(self, ctx, args, super().parse_args)


class WordsGroup(typer.core.TyperGroup):
    """A typer group whose help names value types in words (see `type_words`), wraps its
    paragraphs cleanly (`reflowed`) and suggests only close options (`close_options`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = reflowed(self.help)

    def get_params(self, ctx: Any) -> list[Any]:
        return _with_words(list(super().get_params(ctx)))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return _close_suggestions(self, ctx, args, super().parse_args)


def _close_suggestions(
    command: Any, ctx: Any, args: list[str], parse: Callable[[Any, list[str]], list[str]]
) -> list[str]:
    """Run click's parser; an unknown option's suggestions are replaced by the close ones."""
    try:
        return parse(ctx, args)
    except Exception as exc:
        if type(exc).__name__ == "NoSuchOption" and hasattr(exc, "possibilities"):
            typed = str(getattr(exc, "option_name", ""))
            exc.possibilities = close_options(typed, _long_options(command, ctx)) or None
        raise


class WordsTyper(typer.Typer):
    """typer.Typer whose commands and groups default to the Words* classes."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", WordsGroup)
        super().__init__(**kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Any], Any]:
        kwargs.setdefault("cls", WordsCommand)
        return super().command(name, **kwargs)


# the top-level help: every command group, in words (the Commands box lists them by name)
APP_HELP: Final[str] = (
    "Marker blocks for LLM-agent workers: parse and deliver an agent turn's blocks "
    "(parse, deliver, demo), serve the same kinds as same-turn MCP tools (tools), run a "
    "project's tasks on Codex (worker), answer their agents' approval requests "
    "(approvals), orchestrate plans on Codex workers (plan, dots), draw the fleet (view), "
    "and manage databases, automations, prompts and the agent guide (world, automations, "
    "prompt, guide, schema)."
)
app = WordsTyper(
    name="markertools",
    help=APP_HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)
plan_app = WordsTyper(help="Orchestration proposals (docs/rules.md PLN).", no_args_is_help=True)
world_app = WordsTyper(help="World files and SQLite databases.", no_args_is_help=True)
dots_app = WordsTyper(
    help="The orchestration supervisor: run plans on Codex workers (docs/rules.md DOT).",
    no_args_is_help=True,
)
tools_app = WordsTyper(
    help="The marker tools as an MCP server bound to a task by a token (docs/rules.md TOL).",
    no_args_is_help=True,
)
app.add_typer(plan_app, name="plan")
app.add_typer(tools_app, name="tools")
app.add_typer(dots_app, name="dots")
app.add_typer(world_app, name="world")


def _print_version(value: bool) -> None:
    if value:
        import markertools

        sys.stdout.write(f"markertools {markertools.__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the installed version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="On an internal error, print the traceback (or MARKERTOOLS_DEBUG=1)."
        ),
    ] = False,
) -> None:
    _STATE["debug"] = debug


def debug_requested() -> bool:
    """True once `--debug` was given on this command line."""
    return _STATE["debug"]


class UsageFailure(MarkertoolsError):
    """Raised by library glue for a usage error or unreadable input (exit 2)."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line message to stderr and exit (2 = usage error / unreadable input)."""
    line = " ".join(str(message).split()) or "error"
    sys.stderr.write(f"markertools: {line}\n")
    raise typer.Exit(code)
