"""Finding the framed data regions (INJ-7) in a rendered text, for the tests."""

from __future__ import annotations

import re

DATA_LINE = re.compile(r"^<<<(BEGIN|END) DATA ([0-9a-f]+)>>>$")


def data_regions(text: str) -> list[tuple[int, int, str]]:
    """(begin line, end line, nonce) of each framed data region (1-based, inclusive)."""
    lines = text.splitlines()
    regions: list[tuple[int, int, str]] = []
    open_at: tuple[int, str] | None = None
    for i, line in enumerate(lines, start=1):
        m = DATA_LINE.match(line)
        if not m:
            continue
        if m.group(1) == "BEGIN" and open_at is None:
            open_at = (i, m.group(2))
        elif m.group(1) == "END" and open_at is not None and m.group(2) == open_at[1]:
            regions.append((open_at[0], i, open_at[1]))
            open_at = None
    assert open_at is None, "a data region was never closed"
    return regions
