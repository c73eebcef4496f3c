"""Issue 26 items 5 and 8 on the wire: `markertools dots serve` in a process of its own,
written to in raw bytes (tests/support/mcp_wire.py). Every malformed JSON-RPC message
gets the error JSON-RPC 2.0 names (-32700 with id null for what is not JSON, -32600
with the id when it can be read, -32602 for params by position), a notification gets
none, and the server reads on: the ping sent after each is answered, as the very next
line. A 1 GB line is answered "request too large" with a bounded peak memory (VmHWM,
printed); an over-long line without a readable id is dropped with a log line. MCP
2025-03-26 batches are served as one array; on later versions every request of a batch
is refused by its id. A bad cursor on the read-only tools is a tool error naming
`options.cursor`, with no traceback on stderr. The framing and the id scan are also
checked on their own (`Framer`, `scan_id`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.codex import OfflineCodex
from support.mcp_wire import RawServe

from markertools_adapters.dots._jsonrpc_wire import (
    ID_SCAN_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_STRUCTURE,
    Framer,
    Line,
    Oversize,
    scan_id,
    structure,
)

PING = b'{"jsonrpc":"2.0","id":%d,"method":"ping"%s}'
BATCHES = (
    "invalid request: this connection's MCP version has no JSON-RPC batches (only "
    "2025-03-26 had them); send each message on its own line"
)


def _error(code: int, rid: Any, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _nested(depth: int, rid: int) -> bytes:
    params = b'{"a":' + b"[" * depth + b"]" * depth + b"}"
    return b'{"jsonrpc":"2.0","id":%d,"method":"ping","params":%s}' % (rid, params)


# (what is sent, the lines it is answered with) - each is followed by a ping
MALFORMED: list[tuple[str, bytes, list[dict[str, Any]]]] = [
    (
        "not JSON (cut short)",
        b'{"jsonrpc":"2.0","id":1,',
        [_error(-32700, None, "parse error: EOF while parsing a value at line 1 column 24")],
    ),
    (
        "not JSON at all",
        b"not json",
        [_error(-32700, None, "parse error: expected ident at line 1 column 2")],
    ),
    (
        "NaN is not JSON",
        PING % (2, b',"params":{"x":NaN}'),
        [_error(-32700, None, "parse error: expected value at line 1 column 55")],
    ),
    (
        "a batch on 2025-11-25",
        b"[" + PING % (3, b"") + b"," + PING % (4, b"") + b"]",
        [_error(-32600, 3, BATCHES), _error(-32600, 4, BATCHES)],
    ),
    (
        "a batch of notifications",
        b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]',
        [_error(-32600, None, BATCHES)],
    ),
    ("an empty batch", b"[]", [_error(-32600, None, "invalid request: an empty batch")]),
    (
        'jsonrpc "1.0"',
        b'{"jsonrpc":"1.0","id":5,"method":"ping"}',
        [_error(-32600, 5, 'invalid request: jsonrpc must be "2.0"')],
    ),
    (
        "no jsonrpc",
        b'{"id":"six","method":"ping"}',
        [_error(-32600, "six", 'invalid request: jsonrpc must be "2.0"')],
    ),
    (
        "params by position",
        PING % (7, b',"params":[1,2]'),
        [
            _error(
                -32602,
                7,
                "invalid params: MCP takes params by name (an object), not by position "
                "(an array)",
            )
        ],
    ),
    (
        "params a string",
        PING % (8, b',"params":"x"'),
        [_error(-32600, 8, "invalid request: params must be an object")],
    ),
    (
        "an object id",
        b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
        [_error(-32600, None, "invalid request: id must be a string or an integer")],
    ),
    (
        "a fractional id",
        b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        [_error(-32600, None, "invalid request: id must be a string or an integer")],
    ),
    (
        "a boolean id",
        b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
        [_error(-32600, None, "invalid request: id must be a string or an integer")],
    ),
    (
        "nesting of 250",
        _nested(250, 9),
        [_error(-32600, 9, "invalid request: nested too deeply")],
    ),
    (
        "a 5,000-digit integer in params",
        PING % (10, b',"params":{"n":' + b"9" * 5000 + b"}"),
        [_error(-32600, 10, "invalid request: a number of more than 4300 digits")],
    ),
    (
        "a 5,000-digit id",
        b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
        [_error(-32600, None, "invalid request: a number of more than 4300 digits")],
    ),
    (
        "too many values",
        PING % (11, b',"params":{"a":[' + b"1," * MAX_STRUCTURE + b"1]}"),
        [_error(-32600, 11, "invalid request: more than 250000 values in one message")],
    ),
    ("a number", b"42", [_error(-32600, None, "invalid request: a message must be a JSON object")]),
    (
        "an id alone",
        b'{"jsonrpc":"2.0","id":12}',
        [
            _error(
                -32600,
                12,
                "invalid request: a message needs a method, or an id with either a result or "
                "an error",
            )
        ],
    ),
    (
        "a method that is not a string",
        b'{"jsonrpc":"2.0","id":13,"method":5}',
        [_error(-32600, 13, "invalid request: method must be a string")],
    ),
    (
        "a 300-character method",
        b'{"jsonrpc":"2.0","id":14,"method":"' + b"m" * 300 + b'"}',
        [_error(-32601, 14, "method not found (a method name of more than 200 characters)")],
    ),
    (
        "bytes that are not UTF-8, read as U+FFFD (as the SDK did)",
        b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}',
        [{"jsonrpc": "2.0", "id": "\ufffd", "result": {}}],
    ),
    # JSON-RPC never answers a notification, nor a response
    ("a notification with params by position", b'{"jsonrpc":"2.0","method":"x","params":[1]}', []),
    ("a response to nothing, malformed", b'{"jsonrpc":"2.0","id":15,"result":"x"}', []),
    ("a blank line", b"   \r", []),
]


@pytest.mark.rule("DOT-13")
def test_every_malformed_message_is_answered_and_reading_goes_on(tmp_path: Path) -> None:
    with RawServe(tmp_path / "state") as serve:
        serve.initialize()
        for n, (name, raw, expected) in enumerate(MALFORMED):
            serve.write(raw + b"\n")
            got = [serve.reply() for _ in expected]
            assert got == expected, name
            serve.ping(1000 + n)
        err = serve.finish()
    assert "Traceback" not in err
    ignored = [line for line in err.splitlines() if "ignored a message" in line]
    assert ignored == [
        "markertools dots serve: ignored a message: invalid params: MCP takes params by name "
        "(an object), not by position (an array)",
        "markertools dots serve: ignored a message: invalid response: result must be an "
        "object, error an object with a code and a message",
    ]


@pytest.mark.rule("DOT-13")
def test_brackets_and_commas_inside_strings_are_not_values(tmp_path: Path) -> None:
    text = "[{," * MAX_STRUCTURE + '\\"[' * 10
    with RawServe(tmp_path / "state") as serve:
        serve.initialize()
        serve.send({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"text": text}})
        assert serve.reply() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert "Traceback" not in serve.finish()


@pytest.mark.rule("DOT-13")
def test_a_last_line_without_a_newline_is_still_a_message(tmp_path: Path) -> None:
    # initialize is answered before the server reads on (the SDK runs it inline), so
    # its answer comes even though standard input ends right after it
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    }
    with RawServe(tmp_path / "state") as serve:
        serve.write(json.dumps(initialize).encode())
        serve.stdin.close()
        answer = serve.reply()
        assert serve.proc.wait(60) == 0
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "markertools-dots"


@pytest.mark.rule("DOT-13")
def test_a_2025_03_26_batch_is_answered_as_one_array(tmp_path: Path) -> None:
    with RawServe(tmp_path / "state") as serve:
        assert serve.initialize("2025-03-26")["protocolVersion"] == "2025-03-26"
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "1.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}},
        ]
        serve.send(batch)
        answer = serve.reply()
        assert isinstance(answer, list)
        by_id = {a["id"]: a for a in answer}
        assert sorted(by_id) == [1, 2, 3, 4]
        assert by_id[1] == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert by_id[2] == _error(-32600, 2, 'invalid request: jsonrpc must be "2.0"')
        assert len(by_id[3]["result"]["tools"]) == 9
        assert by_id[4] == _error(-32600, 4, "invalid request: initialize cannot be part of a batch")
        serve.send([{"jsonrpc": "2.0", "id": 5, "method": 7}])  # nothing to wait for
        assert serve.reply() == [_error(-32600, 5, "invalid request: method must be a string")]
        serve.ping(6)
        assert "Traceback" not in serve.finish()


@pytest.mark.rule("DOT-13")
def test_an_over_long_line_is_refused_by_its_id_or_dropped(tmp_path: Path) -> None:
    filler = b"x" * (MAX_MESSAGE_BYTES + 1)
    with RawServe(tmp_path / "state") as serve:
        serve.initialize()
        line = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"a":"' + filler + b'"}}'
        serve.write(line + b"\n")
        size = len(line)
        assert serve.reply() == _error(
            -32600,
            "big",
            f"request too large: {size} bytes (at most {MAX_MESSAGE_BYTES} bytes per message)",
        )
        serve.ping(1)
        # the id comes after the first ID_SCAN_BYTES: nobody to answer, a log line
        late = b'{"params":{"a":"' + filler + b'"},"id":2,"jsonrpc":"2.0","method":"ping"}'
        serve.write(late + b"\n")
        serve.ping(3)
        err = serve.finish()
    assert "Traceback" not in err
    dropped = len(late)
    assert (
        f"markertools dots serve: dropped a message of {dropped} bytes (more than "
        f"{MAX_MESSAGE_BYTES}) whose id could not be read"
    ) in err.splitlines()


@pytest.mark.rule("DOT-13")
def test_a_1_gb_line_costs_a_bounded_amount_of_memory(tmp_path: Path) -> None:
    block = b"x" * (1 << 20)
    with RawServe(tmp_path / "state") as serve:
        serve.initialize()
        serve.ping(1)
        idle = serve.peak_kib()
        head = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"dots_status",'
        head += b'"arguments":{"runId":"'
        serve.write(head)
        for _ in range(1024):
            serve.stdin.write(block)
        serve.write(b'"}}}\n')
        answer = serve.reply()
        serve.ping(2)
        grown = serve.peak_kib() - idle
        assert "Traceback" not in serve.finish()
    size = len(head) + 1024 * len(block) + 4
    assert answer == _error(
        -32600, 7, f"request too large: {size} bytes (at most {MAX_MESSAGE_BYTES} bytes per message)"
    )
    print(f"\n1 GB line: peak RSS {idle} KiB idle, +{grown} KiB after it")
    assert grown < 100 * 1024  # the issue measured +3.5 GB before the bound


@pytest.mark.rule("DOT-13")
def test_a_5_mb_run_id_is_answered_with_its_head_only(tmp_path: Path) -> None:
    with RawServe(tmp_path / "state") as serve:
        serve.initialize()
        started = time.monotonic()
        result = serve.call(1, "dots_status", {"runId": "r" * 5_000_000})
        took = time.monotonic() - started
        serve.ping(2)
        assert "Traceback" not in serve.finish()
    expected = (
        "runId must be at most 200 characters, got '" + "r" * 60 + "…' (5000000 characters)"
    )
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"dots_status: {expected}"
    assert result["structuredContent"]["error"] == {"message": expected, "field": "runId"}
    assert len(json.dumps(result)) < 1000
    print(f"\n5 MB runId over stdio: answered in {took:.3f} s")


@pytest.mark.rule("DOT-13")
def test_a_bad_cursor_is_a_tool_error_naming_it_without_a_traceback(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    args = ["--codex-bin", offline_codex.binary]
    with RawServe(tmp_path / "state", *args, env=offline_codex.env) as serve:
        serve.initialize()
        refused = serve.call(1, "dots_threads", {"options": {"cursor": "garbage"}})
        digits = serve.call(
            2, "dots_thread_read", {"threadId": "t", "options": {"cursor": "9" * 5000}}
        )
        shape = serve.call(3, "dots_threads", {"options": {"cursor": "two words"}})
        serve.ping(4)
        err = serve.finish()
    assert "Traceback" not in err and err.strip() == ""
    message = "Codex could not answer thread/list: invalid cursor: garbage"
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == f"dots_threads: options.cursor: {message}"
    assert refused["structuredContent"]["error"] == {"message": message, "field": "options.cursor"}
    long = "options.cursor must be at most 12 characters, got '" + "9" * 60 + "…' (5000 characters)"
    assert digits["structuredContent"]["error"] == {"message": long, "field": "options.cursor"}
    assert "Exceeds the limit" not in json.dumps(digits)
    assert shape["content"][0]["text"] == (
        "dots_threads: options.cursor must be the nextCursor of an earlier call, got 'two words'"
    )


@pytest.mark.rule("DOT-13", "DOT-3")
def test_a_codex_that_dies_is_a_one_line_tool_error_on_every_read_only_tool(
    tmp_path: Path,
) -> None:
    # a fault the real binary cannot produce on demand: an app-server that exits at once
    dying = tmp_path / "codex-dying"
    dying.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "codex-cli 0.169.0"; exit 0; fi\n'
        "echo 'boom: out of luck' >&2\n"
        "exit 3\n"
    )
    dying.chmod(0o755)
    calls = [("dots_probe", {}), ("dots_threads", {}), ("dots_thread_read", {"threadId": "t"})]
    with RawServe(tmp_path / "state", "--codex-bin", str(dying)) as serve:
        serve.initialize()
        results = [serve.call(n, tool, args) for n, (tool, args) in enumerate(calls)]
        serve.ping(9)
        err = serve.finish()
    assert err.strip() == ""
    for (tool, _), result, method in zip(
        calls, results, ("model/list", "thread/list", "thread/read"), strict=True
    ):
        message = result["structuredContent"]["error"]["message"]
        assert message.startswith(f"Codex could not answer {method}: codex app-server exited")
        assert "\n" not in message and len(message) < 400  # its stderr tail, if any, on one line
        assert result["structuredContent"]["error"]["field"] is None
        assert result["content"][0]["text"] == f"{tool}: {message}"


# ---- the parts on their own ----------------------------------------------------------


def _count(value: Any) -> int:
    """The "[", "{" and "," json.dumps writes for `value` outside strings."""
    if isinstance(value, dict | list):
        items = list(value.values()) if isinstance(value, dict) else value
        return 1 + max(len(items) - 1, 0) + sum(_count(v) for v in items)
    return 0


_TRICKY = st.text(alphabet='[]{},"\\\nxé', max_size=8)
_JSON = st.recursive(
    st.none() | st.integers() | _TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TRICKY, inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.rule("DOT-13")
@given(value=_JSON, ascii_only=st.booleans())
def test_values_are_counted_outside_strings(value: Any, ascii_only: bool) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only).encode()
    count = _count(value)
    assert structure(line, bound=count) == count  # the plain count, or the exact one
    if count:
        assert structure(line, bound=count - 1) == count  # just past the bound


@pytest.mark.rule("DOT-13")
def test_the_framer_cuts_lines_across_chunks_and_keeps_only_a_head_of_a_long_one() -> None:
    framer = Framer(limit=10, head=4)
    assert framer.feed(b"abc") == []
    assert framer.feed(b"de\nfg") == [Line(b"abcde")]
    assert framer.feed(b"hijklmnop") == []  # "fghijklmnop": over 10 bytes
    assert framer.feed(b"qr\n\nxy") == [Oversize(b"fghi", 13), Line(b"")]
    assert framer.end() == [Line(b"xy")]
    assert framer.end() == []
    exact = Framer(limit=3, head=2)
    assert exact.feed(b"abc\nabcd\n") == [Line(b"abc"), Oversize(b"ab", 4)]


@pytest.mark.rule("DOT-13")
@pytest.mark.parametrize(
    ("head", "rid"),
    [
        (b'{"jsonrpc":"2.0","id":42,"method":"x"}', 42),
        (b' { "id" : "a\\"b" , "x":1}', 'a"b'),
        (b'{"method":"x","params":{"s":"}{\\"][","a":[1,{"b":[]}]},"id":-3,', -3),
        (b'{"jsonrpc":"2.0","id":7', None),  # the integer may go on past the head
        (b'{"jsonrpc":"2.0","id":"ab', None),  # the string is cut
        (b'{"jsonrpc":"2.0","id":1.5,', None),
        (b'{"jsonrpc":"2.0","id":null,', None),
        (b'{"jsonrpc":"2.0","id":{"a":1},', None),
        (b'{"params":{"a":"xxxx', None),  # the id may come after: not read
        (b'[{"id":1}]', None),
        (b'{"id":' + b"9" * 4301 + b",", None),
    ],
)
def test_the_id_of_a_message_is_read_from_its_head(head: bytes, rid: Any) -> None:
    assert scan_id(head) == rid


@pytest.mark.rule("DOT-13")
def test_the_id_scan_reads_no_further_than_the_head() -> None:
    late = b'{"params":{"a":"' + b"x" * ID_SCAN_BYTES + b'"},"id":1}'
    assert scan_id(late[:ID_SCAN_BYTES]) is None
    assert scan_id(late) == 1
