"""Docs that run (issues 27 and 35): every Python block of README.md and docs/*.md is a
complete program and runs here, as a reader would run it, failing the suite on any error.

The convention (docs/qa.md "Code blocks in the docs"): a ```python block is marked
`python {run}` and is a complete program - its imports and the setup it needs (an
in-memory or a throwaway SQLite store, `DATABASE_URL` for PostgreSQL). There are no
fragments: a `python {fragment}` block, or an unmarked one, fails
`test_every_python_block_is_a_program_that_runs`, so no snippet can rot unnoticed. A
program that is also an example file is quoted exactly (tests/test_simple_worker.py,
tests/test_examples_docs.py). A `sh {run}` block is
a shell recipe run with bash from the repository root, `.venv/bin/` meaning this
interpreter's directory, `$(scripts/install_codex.sh)` the pinned Codex binary,
`$(scripts/install_claude.sh)` the pinned Claude Code binary and `/tmp/` a fresh directory. Other blocks (JSON shapes, command lines, text) are not
programs and are left alone.

A `{run}` python program runs in a fresh directory holding a copy of examples/ (it may
read `examples/...` or, as examples/quickstart.py does, files next to itself), with
`DATABASE_URL` set to a throwaway PostgreSQL database when the block names it. It must
exit 0 and write nothing to stderr."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

DOCS = (REPO / "README.md", *sorted((REPO / "docs").glob("*.md")))
OPEN = re.compile(r"^(?P<indent> {0,12})(?P<fence>`{3,})(?P<info>[^`\n]*)$")


class Block:
    def __init__(self, path: Path, line: int, info: str, text: str) -> None:
        self.path, self.line, self.info, self.text = path, line, info.strip(), text
        self.language = self.info.split()[0] if self.info else ""
        self.run = "{run}" in self.info.split()
        self.fragment = "{fragment}" in self.info.split()

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file (CommonMark fences, any indentation up
    to a list item's; a longer fence holds shorter ones as text)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = OPEN.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.fullmatch(rf" {{0,{indent + 3}}}{fence}`*\s*", lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        found.append(Block(path, i + 1, match["info"], "\n".join(body) + "\n"))
        i = j + 1
    return found


ALL = [b for path in DOCS for b in blocks(path)]
PYTHON = [b for b in ALL if b.language == "python"]
RUN = [b for b in ALL if b.run]


def test_every_python_block_is_a_program_that_runs() -> None:
    """Issue 35: no python block is a fragment - each is a `{run}` program."""
    fragments = [b.where for b in PYTHON if b.fragment]
    assert fragments == [], (
        f"make each python block a complete program marked {{run}} (imports and setup"
        f" included; docs/qa.md 'Code blocks in the docs'): {fragments}"
    )
    unmarked = [b.where for b in PYTHON if not b.run]
    assert unmarked == [], f"mark each python block {{run}}: {unmarked}"
    assert len(PYTHON) >= 27  # the docs' programs: none was lost to a parsing slip


def test_the_block_parser_sees_a_fragment(tmp_path: Path) -> None:
    """The refusal above can fire: a `{fragment}` block is found as one."""
    page = tmp_path / "page.md"
    page.write_text("text\n\n```python {fragment}\nreport = deliver_turn(text)\n```\n")
    (block,) = blocks(page)
    assert (block.language, block.fragment, block.run) == ("python", True, False)


def test_only_python_and_sh_blocks_are_run() -> None:
    assert {b.language for b in RUN} <= {"python", "sh"}, [b.where for b in RUN]


def _environment(block: Block) -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if "DATABASE_URL" in block.text:
        from support.postgres import require_dsn

        env["DATABASE_URL"] = require_dsn()
    return env


@pytest.mark.parametrize("block", RUN, ids=[b.where for b in RUN])
def test_the_program_runs_as_written(block: Block, tmp_path: Path) -> None:
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples", work / "examples")
    if block.language == "python":
        program = work / "examples" / "doc_block.py"
        program.write_text(block.text, encoding="utf-8")
        command = [sys.executable, str(program)]
        cwd = work
    else:
        from support.codex import codex_bin

        # the documented /tmp/ paths first: the repository itself may live under /tmp (a
        # clean clone in CI), and its venv and codex paths must stay as they are
        script = block.text.replace("/tmp/", f"{tmp_path}/")
        script = script.replace(".venv/bin/", str(Path(sys.executable).parent) + "/")
        if "$(scripts/install_codex.sh)" in script:
            script = script.replace("$(scripts/install_codex.sh)", codex_bin())
        if "$(scripts/install_claude.sh)" in script:
            from support.claude import claude_bin

            script = script.replace("$(scripts/install_claude.sh)", claude_bin())
        command = ["bash", "-e", "-c", script]
        cwd = REPO
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=_environment(block),
            stdin=subprocess.DEVNULL,  # a server a block starts on stdio ends at EOF
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        if "DATABASE_URL" in block.text:
            _drop_schemas_the_block_made(block)
    assert done.returncode == 0, f"{block.where}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    if block.language == "python":
        assert done.stderr == "", f"{block.where}\n{done.stderr[-3000:]}"


def _drop_schemas_the_block_made(block: Block) -> None:
    from support.postgres import drop_schema, require_dsn

    for schema in re.findall(r'schema="([a-z_]+)"', block.text):
        drop_schema(require_dsn(), schema)
