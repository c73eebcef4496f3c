"""A scripted stand-in for `codex app-server`, for the faults the real binary can't
produce on demand: `crash` (exit in the middle of a turn), `hang` (accept a turn, then
answer nothing, not even turn/interrupt), `garbage` (a line that is not JSON before the
turn's notifications); `ok` behaves. Every message it sends is a message the pinned
codex 0.169.0 really sent (tests/fixtures/codex/v0169/appserver-messages.json, captured
from the binary) with only ids, cwd, text and times replaced, so it speaks only what the
real schema allows (test_supervisor_faults.py validates its output against the schema
the pinned binary generates).

    python fake_appserver.py MODE app-server
"""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
TEMPLATES = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "codex" / "v0169" / "appserver-messages.json").read_text()
)
THREAD = "01a23332-0000-7000-8000-000000000001"
TURN = "01a23332-0000-7000-8000-000000000002"


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fill(name: str, **repl: object) -> dict:
    """The captured message `name`, with the captured ids / cwd replaced."""
    text = json.dumps(TEMPLATES[name])
    src = TEMPLATES["thread/start"]["result"]
    old_thread, old_cwd = src["thread"]["id"], src["cwd"]
    text = text.replace(old_thread, THREAD).replace(json.dumps(old_cwd)[1:-1], str(repl.get("cwd", os.getcwd())))
    turn_id = TEMPLATES["turn/start"]["result"]["turn"]["id"]
    text = text.replace(turn_id, TURN)
    msg = json.loads(text)
    if "emittedAtMs" in msg:
        msg["emittedAtMs"] = int(time.time() * 1000)
    return msg


def main() -> None:
    cwd = os.getcwd()
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue  # the `initialized` notification, or a response of ours
        if method == "initialize":
            reply = fill("initialize")
            reply["id"] = rid
            send(reply)
        elif method == "thread/start":
            cwd = (msg.get("params") or {}).get("cwd") or cwd
            reply = fill("thread/start", cwd=cwd)
            reply["id"] = rid
            send(reply)
            send(fill("thread/started", cwd=cwd))
        elif method == "turn/start":
            reply = fill("turn/start", cwd=cwd)
            reply["id"] = rid
            send(reply)
            send(fill("turn/started", cwd=cwd))
            if MODE == "crash":
                os._exit(17)
            if MODE == "hang":
                continue
            if MODE == "garbage":
                sys.stdout.write("this is not json {\n")
                sys.stdout.flush()
            item = fill("item/completed", cwd=cwd)
            item["params"]["item"]["text"] = "fake app-server reply"
            send(item)
            done = fill("turn/completed", cwd=cwd)
            done["params"]["turn"]["items"] = [copy.deepcopy(item["params"]["item"])]
            send(done)
        elif method == "turn/interrupt":
            if MODE == "hang":
                continue  # never answers
            send({"id": rid, "result": {}})
        else:
            send({"id": rid, "error": {"code": -32600, "message": f"fake: {method} not supported"}})


if __name__ == "__main__":
    main()
