# Owns: the typer application objects and the helpers every command module shares:
# a usage failure (one line on stderr, exit 2, no traceback), JSON output, the global
# options (`--version`, `--debug`, typer's shell completion) and help that names value
# types in words (TEXT, PATH, INTEGER, a choice list; nothing for a flag).
# Commands live in sibling modules; each only parses options, calls library
# functions and prints (fastapi-cli style).
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, Final, NoReturn

import typer
import typer.core

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
            words = _ANNOTATION_WORDS.get(annotation) or getattr(
                annotation, "__name__", "value"
            ).upper()
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
        words = type_words(param)
        param.display_type_rich = lambda ctx, _w=words: _w  # instance override, this command only
    return params


class WordsCommand(typer.core.TyperCommand):
    """A typer command whose help names value types in words (see `type_words`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _with_words(list(super().get_params(ctx)))


class WordsGroup(typer.core.TyperGroup):
    """A typer group whose help names value types in words (see `type_words`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _with_words(list(super().get_params(ctx)))


class WordsTyper(typer.Typer):
    """typer.Typer whose commands and groups default to the Words* classes."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", WordsGroup)
        super().__init__(**kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Any], Any]:
        kwargs.setdefault("cls", WordsCommand)
        return super().command(name, **kwargs)


app = WordsTyper(
    name="markertools",
    help="Inspect what markertools does with an agent turn: parse, deliver, prompts, plans.",
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
app.add_typer(plan_app, name="plan")
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
    """Inspect what markertools does with an agent turn: parse, deliver, prompts, plans."""
    _STATE["debug"] = debug


def debug_requested() -> bool:
    """True once `--debug` was given on this command line."""
    return _STATE["debug"]


class UsageFailure(Exception):
    """Raised by library glue for a usage error or unreadable input (exit 2)."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line message to stderr and exit (2 = usage error / unreadable input)."""
    line = " ".join(str(message).split()) or "error"
    sys.stderr.write(f"markertools: {line}\n")
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    """Print `obj` as indented JSON (non-ASCII kept) and a newline."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
