# Owns: reading Codex files from disk (or stdin for "-") into a `CodexTranscript`:
# app-server stream captures and rollout files, plain or zstd-compressed (`*.zst`,
# needs the optional `zstandard` package, imported only when such a file is read).
#
# Must never: raise on the file's content (only on a file that cannot be opened, or a
# `.zst` file without `zstandard`: `CodexInputError`), or read the whole file into
# memory at once (it is fed to the sans-I/O readers in chunks).
#
# Invariants:
#   Rule 1: corrupt compressed data ends the input with a problem (never an exception);
#           turns still open at that point end "inProgress".
#   Rule 2: a turn that a later `turn_aborted` names is reported "interrupted" even if a
#           completion event came first (the safer reading of a contradictory file).
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import BinaryIO, Final

import attrs

from markertools_adapters.codex._appserver import AppServerTurnReader
from markertools_adapters.codex._lines import LineReader
from markertools_adapters.codex._records import (
    STATUS_INTERRUPTED,
    CodexProblem,
    CodexTranscript,
    CodexTurn,
)
from markertools_adapters.codex._rollout import RolloutTurnReader

CHUNK_BYTES: Final = 1 << 20
ZSTD_INPUT_SLICE: Final = 1024
_UUID = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)
ZSTD_HINT: Final = (
    "reading a .zst file needs the 'zstandard' package (pip install 'markertools[zstd]')"
)


class CodexInputError(Exception):
    """The file cannot be read at all (missing, unreadable, or compressed without zstandard)."""


def read_app_server_events(path: str | os.PathLike[str]) -> CodexTranscript:
    """Every turn of a captured app-server stdout stream (JSONL), and its problems."""
    reader = AppServerTurnReader()
    turns, problems = _drain(reader, Path(path))
    return CodexTranscript(tuple(turns), tuple(problems))


def read_rollout(path: str | os.PathLike[str]) -> CodexTranscript:
    """Every turn of a rollout file (`rollout-*.jsonl` or `.jsonl.zst`), and its problems."""
    path = Path(path)
    reader = RolloutTurnReader(thread_id=thread_id_from_name(path))
    turns, problems = _drain(reader, path)
    late = reader.late_aborts
    if late:  # Rule 2
        turns = [
            attrs.evolve(t, status=STATUS_INTERRUPTED, error=None)
            if t.turn_id in late and t.finished
            else t
            for t in turns
        ]
    return CodexTranscript(tuple(turns), tuple(problems))


def thread_id_from_name(path: Path) -> str | None:
    """The session uuid codex puts at the end of a rollout file name, if any."""
    name = path.name
    for suffix in (".zst", ".jsonl"):
        name = name.removesuffix(suffix)
    match = _UUID.search(name)
    return match.group(1).lower() if match else None


def _drain(reader: LineReader, path: Path) -> tuple[list[CodexTurn], list[CodexProblem]]:
    turns: list[CodexTurn] = []
    with _open(path) as fh:
        chunks = _zstd_chunks(fh) if path.name.endswith(".zst") else _plain_chunks(fh)
        try:
            for chunk in chunks:
                turns.extend(reader.feed(chunk))
        except _CorruptInput as exc:  # Rule 1
            reader.problems.append(CodexProblem(reader.lines_seen + 1, str(exc)))
    turns.extend(reader.close())
    return turns, sorted(reader.problems, key=lambda p: p.line)


class _CorruptInput(Exception):
    pass


def _open(path: Path) -> AbstractContextManager[BinaryIO]:
    if str(path) == "-":
        return nullcontext(sys.stdin.buffer)  # stdin is read, never closed
    try:
        return path.open("rb")
    except OSError as exc:
        raise CodexInputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _plain_chunks(fh: BinaryIO) -> Iterator[bytes]:
    while True:
        try:
            chunk = fh.read(CHUNK_BYTES)
        except OSError as exc:
            raise _CorruptInput(f"reading stopped: {exc}") from exc
        if not chunk:
            return
        yield chunk


def _zstd_chunks(fh: BinaryIO) -> Iterator[bytes]:
    """Decompressed bytes, frame after frame. Input is fed in small slices so that one
    call never expands into more than ~45 MB (a zstd block of 4 bytes may stand for
    128 KiB), and a file that ends inside a frame is reported (zstandard's readers
    silently stop there)."""
    try:
        import zstandard
    except ImportError as exc:
        raise CodexInputError(ZSTD_HINT) from exc
    dctx = zstandard.ZstdDecompressor()
    frame = dctx.decompressobj()
    in_frame = False
    try:
        for chunk in _plain_chunks(fh):
            for start in range(0, len(chunk), ZSTD_INPUT_SLICE):
                data = chunk[start : start + ZSTD_INPUT_SLICE]
                while data:
                    in_frame = True
                    out = frame.decompress(data)
                    if out:
                        yield out
                    if not frame.eof:
                        break
                    data, frame, in_frame = frame.unused_data, dctx.decompressobj(), False
    except zstandard.ZstdError as exc:
        raise _CorruptInput(
            f"compressed data is corrupt ({exc}); the rest of the file is unreadable"
        ) from exc
    if in_frame:
        raise _CorruptInput("compressed data ends inside a frame (truncated file?)")
