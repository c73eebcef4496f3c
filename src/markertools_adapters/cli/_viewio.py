# Owns: what `markertools view` and `markertools dots view` share at the edge: rendering
# a page model (a missing `views` extra becomes the one-line hint to install it) and
# writing the page file atomically (a temporary file beside it, then a rename), so a
# browser that has the file open never sees half a page.
#
# Must never: create a directory (issue 36 item 9: a mistyped `--out` path silently
# grew a tree of directories; the directory above the page must exist, else one line,
# exit 2, nothing written); leave a temporary file behind; print anything (the commands
# print their one confirmation line); turn a failure into a traceback (UsageFailure:
# exit 2).
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from markertools_adapters.cli._app import UsageFailure
from markertools_adapters.stores import EXTRA_MODULES, MissingExtra


def rendered(render: Callable[[], str]) -> str:
    """`render()`, with a missing Jinja2 named as the `views` extra to install."""
    try:
        return render()
    except ImportError as exc:
        root = (exc.name or "").split(".")[0]
        if root in EXTRA_MODULES["views"]:
            raise MissingExtra("views", "drawing a view", root) from None
        raise


def write_page(out: Path, html: str) -> int:
    """Write `html` to `out` (UTF-8); returns the size in bytes. An existing file is
    replaced whole; the directory above it must exist (nothing is created)."""
    if out.is_dir():
        raise UsageFailure(f"--out {out}: is a directory; name the HTML file to write")
    parent = out.parent
    if not parent.is_dir():
        what = "is not a directory" if parent.exists() else "does not exist"
        raise UsageFailure(
            f"--out {out}: the directory {parent} {what}; nothing was written "
            "(create it first: view never creates directories)"
        )
    data = html.encode("utf-8")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise UsageFailure(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise UsageFailure(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    return len(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def size_text(size: int) -> str:
    """ "12.3 KB", "4.56 MB"."""
    return f"{size / 1_000_000:.2f} MB" if size >= 1_000_000 else f"{size / 1000:.1f} KB"


__all__ = ["rendered", "size_text", "write_page"]
