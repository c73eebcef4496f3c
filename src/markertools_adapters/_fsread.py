# Owns: the two bounded reads task-files performs on an already opened, already
# checked descriptor (see worktrees.py for how the descriptor is obtained safely):
# listing a directory (FIL-3) and decoding a UTF-8 text file (FIL-4).
#
# Invariants:
#   Rule 1: never opens anything by path: it only reads the descriptor it is given
#           (and, for listing, classifies entries without following symlinks).
#   Rule 2: bounded memory and bounded reading: a listing keeps `limit` names whatever
#           the directory's size; a file is read in READ_CHUNK pieces, keeping at most
#           max_chars + one chunk of text, and reading stops at the end of the file or
#           once max_chars + 1 code points are decoded and SCAN_BYTES bytes were read
#           (a 50 MB file costs 1 MiB of reading and ~ one chunk of memory).
#   Rule 3: a file is text only when the bytes read hold no NUL and decode as strict
#           UTF-8; a multibyte character cut by a chunk boundary is completed by the
#           next chunk (incremental decoder); an incomplete sequence at the end of
#           the file is invalid.
from __future__ import annotations

import codecs
import heapq
import os
from collections.abc import Iterator
from typing import Final

from markertools import Msg, display_name, msg

READ_CHUNK: Final[int] = 64 * 1024
SCAN_BYTES: Final[int] = 1024 * 1024  # files up to this size are checked whole


def _entries(fd: int, counter: list[int]) -> Iterator[tuple[bytes, str, bool]]:
    with os.scandir(fd) as it:
        for entry in it:
            counter[0] += 1
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            yield os.fsencode(entry.name), entry.name, is_dir


def list_directory(fd: int, limit: int) -> tuple[tuple[str, ...], int]:
    """FIL-3: the first `limit` entries sorted by name (raw bytes order, i.e. code point
    order for UTF-8 names), directories with a trailing "/" (a symlink to a directory
    is not a directory here), and how many entries were left out."""
    counter = [0]
    first = heapq.nsmallest(limit, _entries(fd, counter))
    shown = tuple(display_name(name) + ("/" if is_dir else "") for _, name, is_dir in first)
    return shown, counter[0] - len(first)


def read_text(
    fd: int, max_chars: int, scan_bytes: int = SCAN_BYTES, chunk: int = READ_CHUNK
) -> tuple[str, bool, int | None] | Msg:
    """FIL-4: (text of at most max_chars code points, truncated, total code points when
    the whole file was read), or a Msg saying why the file is not text.

    Past max_chars the reader keeps decoding (and counting, not storing) until
    `scan_bytes` bytes were read, so a file up to that size is checked whole and its
    total is known; a larger file is judged on its first `scan_bytes` bytes."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    pieces: list[str] = []
    kept = 0  # code points stored in pieces (never much more than max_chars)
    count = 0  # code points decoded
    offset = 0  # bytes consumed before the current chunk
    while True:
        data = os.read(fd, chunk)
        if not data:
            try:
                tail = decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                return msg("files.why_utf8_end")
            count += len(tail)
            text = "".join(pieces) + tail
            return text[:max_chars], count > max_chars, count
        nul = data.find(b"\x00")
        if nul >= 0:
            return msg("files.why_nul", offset=offset + nul)
        try:
            piece = decoder.decode(data)
        except UnicodeDecodeError as exc:
            pending = len(decoder.getstate()[0])  # bytes of a sequence held from before
            return msg("files.why_utf8", offset=max(0, offset - pending + exc.start))
        count += len(piece)
        offset += len(data)
        if kept <= max_chars:
            pieces.append(piece)
            kept += len(piece)
        if count > max_chars and offset >= scan_bytes:
            return "".join(pieces)[:max_chars], True, None
