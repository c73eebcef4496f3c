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
#   Rule 3: reverted turns are dropped from a whole-file transcript (each with a
#           problem): turns a `thread_rolled_back` / `thread/reverted` reverted after
#           they ended, and turns of a rollout that a later segment of the same thread
#           cut off. Codex >= 0.169 `thread/revert` writes nothing into the file it
#           reverts: it starts a segment `rollout-<time>-<thread>_<segment>.jsonl`
#           whose `session_meta.history_base` = {thread_id: the file it continues (the
#           thread id for the first file, else that segment's id), end_ordinal_exclusive}.
#           The live history is the chain from the newest segment (largest UUIDv7) back
#           to the first file; a file on it keeps what comes before its child's cut, a
#           segment off it is reverted entirely. Segments are looked for next to the
#           file and, for a sessions/YYYY/MM/DD layout, in the whole sessions tree.
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
from markertools_adapters.codex._lines import LineReader, load_object
from markertools_adapters.codex._records import (
    STATUS_INTERRUPTED,
    CodexProblem,
    CodexTranscript,
    CodexTurn,
)
from markertools_adapters.codex._rollout import RolloutTurnReader
from markertools_adapters.errors import CodexError

CHUNK_BYTES: Final = 1 << 20
ZSTD_INPUT_SLICE: Final = 1024
_UUID_RE: Final = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# `rollout-<time>-<thread>` or, for a segment written by thread/revert, `..._<segment>`
_ROLLOUT_NAME = re.compile(rf"({_UUID_RE})(?:_({_UUID_RE}))?$")
_DATE_DIRS = (re.compile(r"\d{4}"), re.compile(r"\d{2}"), re.compile(r"\d{2}"))
MAX_META_BYTES: Final = 16 * 1024 * 1024  # first line of a sibling segment we look at
ZSTD_HINT: Final = (
    "reading a .zst file needs the 'zstandard' package (pip install 'markertools[zstd]')"
)


class CodexInputError(CodexError):
    """The file cannot be read at all (missing, unreadable, or compressed without zstandard)."""


def read_app_server_events(path: str | os.PathLike[str]) -> CodexTranscript:
    """Every turn of a captured app-server stdout stream (JSONL), and its problems."""
    reader = AppServerTurnReader()
    turns, problems = _drain(reader, Path(path))
    return CodexTranscript(tuple(reader.drop_reverted(turns)), tuple(problems))


def read_rollout(path: str | os.PathLike[str]) -> CodexTranscript:
    """Every turn of a rollout file (`rollout-*.jsonl` or `.jsonl.zst`), and its problems.
    Turns that were reverted are not in it (Rule 3)."""
    path = Path(path)
    cut, note, scan_problems = _revert_cut(path)
    reader = RolloutTurnReader(
        thread_id=thread_id_from_name(path), reverted_from_ordinal=cut, revert_note=note
    )
    turns, problems = _drain(reader, path)
    late = reader.late_aborts
    if late:  # Rule 2
        turns = [
            attrs.evolve(t, status=STATUS_INTERRUPTED, error=None)
            if t.turn_id in late and t.finished
            else t
            for t in turns
        ]
    if reader.reverted:  # Rule 3
        turns = [t for t in turns if (t.turn_id, t.line) not in reader.reverted]
    return CodexTranscript(tuple(turns), tuple(scan_problems + problems))


def thread_id_from_name(path: Path) -> str | None:
    """The session uuid codex puts at the end of a rollout file name, if any (for a
    segment `..._<segment>.jsonl` written by thread/revert: the thread's uuid)."""
    ids = _name_ids(path)
    return ids[0] if ids else None


def _name_ids(path: Path) -> tuple[str, str | None] | None:
    """(thread id, segment id or None) from a rollout file name."""
    name = path.name
    for suffix in (".zst", ".jsonl"):
        name = name.removesuffix(suffix)
    match = _ROLLOUT_NAME.search(name)
    if match is None:
        return None
    segment = match.group(2)
    return match.group(1).lower(), segment.lower() if segment else None


# ---- thread/revert segments (Rule 3) ------------------------------------------------


def _revert_cut(path: Path) -> tuple[int | None, str, list[CodexProblem]]:
    """(ordinal from which `path` is reverted or None, a note naming why, problems)."""
    ids = _name_ids(path) if str(path) != "-" else None
    if ids is None:
        return None, "", []
    thread, segment = ids
    own = segment or thread
    parents: dict[str, tuple[str, int, str]] = {}  # segment -> (base id, cut, file name)
    problems: list[CodexProblem] = []
    for other in [*_segment_files(path, thread), *([path] if segment else [])]:
        other_ids = _name_ids(other)
        if other_ids is None or other_ids[1] is None:
            continue
        base = _history_base(other)
        if base is None:
            problems.append(
                CodexProblem(
                    0,
                    f"cannot read the history_base of {other.name} (a thread/revert segment "
                    "of this thread): every turn of this file is treated as reverted",
                )
            )
            return 0, f"history of {other.name} unknown", problems
        parents[other_ids[1]] = (base[0], base[1], other.name)
    if not parents:
        return None, "", []
    head = max(parents)  # UUIDv7: the newest segment
    node, cut_of = head, {}  # file id on the live chain -> (cut, name of its child)
    seen = set()
    while node in parents and node not in seen:
        seen.add(node)
        base_id, cut, name = parents[node]
        cut_of[base_id] = (cut, name)
        node = base_id
    if own == head:
        return None, "", problems
    if own in cut_of:
        cut, name = cut_of[own]
        return cut, f"thread/revert: {name} continues the thread from ordinal {cut}", problems
    return 0, f"thread/revert: this segment is not in the live history ending in {head}", problems


def _segment_files(path: Path, thread: str) -> list[Path]:
    pattern = f"rollout-*{thread}_*.jsonl*"
    folder = path.parent
    parts = folder.parts
    roots = [folder]
    if len(parts) >= 4 and all(r.fullmatch(p) for r, p in zip(_DATE_DIRS, parts[-3:], strict=True)):
        roots = [folder.parent.parent.parent]
        pattern = f"*/*/*/{pattern}"
    found: set[Path] = set()
    for root in roots:
        try:
            found.update(p for p in root.glob(pattern) if p.name.endswith((".jsonl", ".jsonl.zst")))
        except OSError:
            continue
    return sorted(found)  # the file being read may be among them: it is a segment too


def _history_base(path: Path) -> tuple[str, int] | None:
    """(file id, end_ordinal_exclusive) from a segment's first line, None if unreadable."""
    head = bytearray()
    try:
        with _open(path) as fh:
            chunks = _zstd_chunks(fh) if path.name.endswith(".zst") else _plain_chunks(fh)
            for chunk in chunks:
                head += chunk
                if b"\n" in head or len(head) > MAX_META_BYTES:
                    break
    except (CodexInputError, _CorruptInput):
        return None
    obj, _ = load_object(bytes(head.split(b"\n", 1)[0]).decode("utf-8", "replace"))
    payload = obj.get("payload") if obj is not None else None
    base = payload.get("history_base") if isinstance(payload, dict) else None
    if not isinstance(base, dict):
        return None
    base_id, cut = base.get("thread_id"), base.get("end_ordinal_exclusive")
    if not isinstance(base_id, str) or not isinstance(cut, int) or isinstance(cut, bool):
        return None
    return base_id.lower(), cut


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
