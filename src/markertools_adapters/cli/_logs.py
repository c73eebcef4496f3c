# Owns: the logging of the long-running commands (`worker run`, `tools serve`, `dots serve`,
# FLT-4): warnings and errors (or the `--log-level` asked for) go to stderr, one line each
# with its cause - never a traceback - and, with `--json-log`, also as JSON lines
# (`{"event": "log", "level", "logger", "message", "at"}`) on the event stream.
#
# Must never: leave a record of the level asked for unwritten because of a library
# setting (the handler sits on the "markertools" logger itself, whose level it sets), or
# write a record on more than one line.
from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO, Final

from markertools import InvalidArgument, summarize_error

LOG_LEVELS: Final[tuple[str, ...]] = ("debug", "info", "warning", "error")
ROOT: Final[str] = "markertools"
DRIVER_LOGGERS: Final[tuple[str, ...]] = ("psycopg", "uvicorn", "mcp")


class OneLine(logging.Formatter):
    """`markertools COMMAND: LEVEL: message[: the exception, summarised]` on one line."""

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command

    def format(self, record: logging.LogRecord) -> str:
        return f"markertools {self.command}: {record.levelname.lower()}: {line_of(record)}"


def line_of(record: logging.LogRecord) -> str:
    text = record.getMessage()
    if record.exc_info and record.exc_info[1] is not None:
        text = f"{text}: {summarize_error(record.exc_info[1])}"
    return " ".join(text.split())


class JsonLog(logging.Handler):
    """`--json-log`: each record as one JSON line on `stream` (flushed)."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        body = {
            "event": "log",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": line_of(record),
            "at": time.time(),
        }
        try:
            self.stream.write(json.dumps(body, ensure_ascii=False) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stream stops the log, never the command
            pass


def setup_logging(
    command: str, level: str = "warning", *, json_stream: IO[str] | None = None
) -> logging.Logger:
    """FLT-4: attach the stderr handler (and the JSON one) to the "markertools" logger at
    `level` (one of LOG_LEVELS); returns that logger. Calling it again replaces them."""
    if level not in LOG_LEVELS:
        raise InvalidArgument(f"--log-level {level}: expected one of {', '.join(LOG_LEVELS)}")
    logger = logging.getLogger(ROOT)
    for handler in list(logger.handlers):
        if isinstance(handler, JsonLog) or getattr(handler, "_markertools_cli", False):
            logger.removeHandler(handler)
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(OneLine(command))
    stderr._markertools_cli = True  # type: ignore[attr-defined]
    logger.addHandler(stderr)
    if json_stream is not None:
        logger.addHandler(JsonLog(json_stream))
    logger.setLevel(getattr(logging, level.upper()))
    logger.disabled = False
    # the drivers' own chatter during an outage ("discarding closed connection") is what
    # our outage lines already say: only their errors, in the same one-line form
    for name in DRIVER_LOGGERS:
        driver = logging.getLogger(name)
        for handler in list(driver.handlers):
            if getattr(handler, "_markertools_cli", False):
                driver.removeHandler(handler)
        driver.addHandler(stderr)
        driver.setLevel(max(logging.ERROR, getattr(logging, level.upper())))
        driver.propagate = False
    return logger


__all__ = ["LOG_LEVELS", "JsonLog", "OneLine", "setup_logging"]
