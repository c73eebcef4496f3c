"""A real headless Chromium (Debian's `chromium`), driven by the Chrome DevTools
Protocol over a pipe: `--remote-debugging-pipe` reads commands on the browser's fd 3
and writes answers and events on its fd 4, each message one JSON text ended by a NUL.
Standard library only: no websocket, no port, no driver binary.

`Chromium` is one browser process (tests share one per module); `Chromium.page()` opens
a fresh tab with the network shut (`Network.setBlockedURLs ["*"]` on top of a host
resolver that resolves nothing) and records what a view must never do: any request
other than the page's own file, console errors, uncaught exceptions, error log
entries. `Page` interacts as a person does: real mouse events at an element's centre,
typed text, and screenshots (`decode_png` / `distinct_colours` check them).

Without a browser the tests skip with SKIP_REASON - except under
`MARKERTOOLS_REQUIRE_REAL=1` (`make test`, CI), where a missing browser fails them:
`make test` installs it first (scripts/install_chromium.sh).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import signal
import struct
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SKIP_REASON = (
    "browser tests need Chromium: install Debian's chromium (scripts/install_chromium.sh) "
    "or set MARKERTOOLS_CHROMIUM_BIN"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--mute-audio",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--window-size=1280,900",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """MARKERTOOLS_CHROMIUM_BIN, else Debian's chromium on PATH."""
    path = os.environ.get("MARKERTOOLS_CHROMIUM_BIN", "")
    if path:
        return path if Path(path).is_file() and os.access(path, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_bin() -> str:
    """The browser; skips (or, under MARKERTOOLS_REQUIRE_REAL=1, fails) when missing."""
    import pytest

    path = find_chromium()
    if path:
        return path
    if os.environ.get("MARKERTOOLS_REQUIRE_REAL") == "1":
        pytest.fail(f"MARKERTOOLS_REQUIRE_REAL=1 but no browser: {SKIP_REASON}")
    pytest.skip(SKIP_REASON)


class BrowserError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Chromium:
    """One headless Chromium process spoken to over the DevTools pipe."""

    def __init__(self, binary: str, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="markertools-chromium-")  # new, empty
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the browser reads its fd 3 and writes its fd 4; the pipe ends are first moved
        # above 9 so that placing them on 3 and 4 never overwrites one with the other
        high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
        high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(to_browser_r)
        os.close(from_browser_w)
        try:
            self.pid = os.posix_spawn(
                binary,
                [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, high_r, 3),
                    (os.POSIX_SPAWN_DUP2, high_w, 4),
                ],
                setsid=True,  # its helper processes form one group, ended with it
            )
        finally:
            os.close(high_r)
            os.close(high_w)
        self._next = 0
        self._lock = threading.Lock()
        self._answers: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._listeners: list[tuple[str | None, queue.Queue[dict[str, Any]]]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.version = self.send("Browser.getVersion")

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                for q in list(self._answers.values()):
                    q.put({"error": {"message": "the browser closed its pipe"}})
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    answer = self._answers.get(message["id"])
                    if answer is not None:
                        answer.put(message)
                else:
                    with self._lock:
                        listeners = list(self._listeners)
                    for session, q in listeners:
                        if session is None or message.get("sessionId") == session:
                            q.put(message)

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One command; its `result` (raises BrowserError on an error or no answer)."""
        with self._lock:
            self._next += 1
            ident = self._next
            answer: queue.Queue[dict[str, Any]] = queue.Queue()
            self._answers[ident] = answer
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            got = answer.get(timeout=timeout or self.timeout)
        except queue.Empty:
            raise BrowserError(f"{method}: no answer in {timeout or self.timeout} s") from None
        finally:
            self._answers.pop(ident, None)
        if "error" in got:
            raise BrowserError(f"{method}: {got['error'].get('message')}")
        return dict(got.get("result", {}))

    def listen(self, session: str | None) -> queue.Queue[dict[str, Any]]:
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._lock:
            self._listeners.append((session, q))
        return q

    def page(self) -> Page:
        """A new tab with the network shut and every request and error recorded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        return Page(self, target, session)

    def close(self) -> None:
        """Close the browser (politely, then its whole process group)."""
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", timeout=5)
        deadline = time.monotonic() + 10
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.killpg(self.pid, signal.SIGKILL)  # the group of the browser we started
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)  # helpers the browser left behind
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


@contextmanager
def chromium() -> Iterator[Chromium]:
    browser = Chromium(chromium_bin())
    try:
        yield browser
    finally:
        browser.close()


class Page:
    """One tab: load a file, query the DOM, act with real input events, screenshot."""

    def __init__(self, browser: Chromium, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session
        self.events = browser.listen(session)
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Network.enable")
        self.send("Network.setBlockedURLs", {"urls": ["*"]})
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def send(self, method: str, params: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session, **kw)

    def drain(self) -> None:
        """Record every event received so far (requests, console errors, exceptions)."""
        while True:
            try:
                message = self.events.get_nowait()
            except queue.Empty:
                return
            self._note(message)

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}")

    def open(self, path: Path, *, ready: bool = True, timeout: float = 60.0) -> float:
        """Load `path` from file:// and wait for the load event and (with `ready`) for
        the view's first render; returns the seconds from navigation to that point."""
        url = path.resolve().as_uri()
        start = time.perf_counter()
        self.send("Page.navigate", {"url": url}, timeout=timeout)
        deadline = time.monotonic() + timeout
        loaded = False
        while not loaded:
            try:
                message = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise BrowserError(f"{url}: no load event in {timeout} s") from None
            self._note(message)
            loaded = message.get("method") == "Page.loadEventFired"
        if ready:
            while self.eval("document.documentElement.dataset.ready === '1'") is not True:
                if time.monotonic() > deadline:
                    raise BrowserError(f"{url}: the view did not render in {timeout} s")
                time.sleep(0.02)
        took = time.perf_counter() - start
        self.drain()
        return took

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values)."""
        got = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in got:
            raise BrowserError(f"{expression}: {got['exceptionDetails'].get('text')}")
        return got.get("result", {}).get("value")

    def centre(self, selector: str, index: int = 0) -> tuple[float, float]:
        """The centre of the `index`th element matching `selector`, scrolled into view."""
        box = self.eval(
            f"(() => {{ const e = document.querySelectorAll({json.dumps(selector)})[{index}];"
            " if (!e) return null; e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        if box is None:
            raise BrowserError(f"no element {selector!r} #{index}")
        return float(box[0]), float(box[1])

    def hover(self, selector: str, index: int = 0) -> None:
        x, y = self.centre(selector, index)
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def click(self, selector: str, index: int = 0) -> None:
        """A real left click (move, press, release) at the element's centre."""
        x, y = self.centre(selector, index)
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        """Click into a field and type `text` (as inserted text, as an IME would)."""
        self.click(selector)
        self.send("Input.insertText", {"text": text})

    def key(self, key: str) -> None:
        """Press and release one key in the focused element ("Enter", "ArrowDown", ...)."""
        code = {"Enter": 13, " ": 32, "ArrowUp": 38, "ArrowDown": 40, "Tab": 9, "Delete": 46,
                "Backspace": 8}.get(key, 0)
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent",
                      {"type": kind, "key": key, "windowsVirtualKeyCode": code})

    def wheel(self, selector: str, delta_y: float) -> None:
        """Turn the mouse wheel over an element (a person scrolling a list)."""
        x, y = self.centre(selector)
        self.send("Input.dispatchMouseEvent",
                  {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta_y})

    def text(self, selector: str) -> str:
        """The text a person sees in the first element matching `selector`."""
        return str(self.eval(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return '';"
            " return e.innerText !== undefined ? e.innerText : e.textContent; })()"
        ))

    def settle(self) -> None:
        """Wait for two animation frames (a scroll's repaint), then record events."""
        self.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        self.drain()

    def screenshot(self, path: Path, *, full: bool = False) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if full:
            params["captureBeyondViewport"] = True
        data = base64.b64decode(self.send("Page.captureScreenshot", params)["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        with contextlib.suppress(BrowserError):
            self.browser.send("Target.closeTarget", {"targetId": self.target}, timeout=5)


# ---- PNG, decoded with zlib alone -------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, rows of raw pixel bytes) of an 8-bit,
    non-interlaced greyscale / RGB / RGBA PNG (what Chromium's screenshots are)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def distinct_colours(data: bytes, step: int = 2) -> tuple[int, float]:
    """(distinct pixel values, share of the most common one) of a PNG, sampling every
    `step`-th row and column."""
    width, _, channels, rows = decode_png(data)
    counts: dict[bytes, int] = {}
    for row in rows[::step]:
        for x in range(0, width, step):
            pixel = row[x * channels : (x + 1) * channels]
            counts[pixel] = counts.get(pixel, 0) + 1
    total = sum(counts.values())
    return len(counts), max(counts.values()) / total
