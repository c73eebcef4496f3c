"""The package's public names load lazily (PEP 562): `import markertools` and
`parse_turn` never import delivery or markdown-it-py; every name in `__all__` still
imports, by attribute and by `from markertools import X`."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import markertools


def _modules_after(code: str) -> set[str]:
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.rule("EXT-6")
def test_import_markertools_loads_no_delivery_and_no_markdown_it() -> None:
    loaded = _modules_after("import markertools")
    assert "markertools.deliver.loop" not in loaded
    assert "markdown_it" not in loaded
    assert not {m for m in loaded if m.startswith("markertools.")}, "submodules loaded eagerly"


@pytest.mark.rule("EXT-6", "TRN-2")
def test_parse_turn_loads_only_the_parse_layer() -> None:
    code = (
        "import markertools\n"
        "plan = markertools.parse_turn('1. go\\n   ```task-list\\n   {}\\n   ```\\n"
        '```task-create\\n{"prompt": "x"}\\n```\\n\')\n'
        "assert [c.kind for c in plan.commands] == ['task-create', 'task-list'], plan\n"
    )
    loaded = _modules_after(code)
    delivery = {
        m
        for m in loaded
        if m.startswith(("markertools.deliver.loop", "markertools._exec", "markertools.deliver.gates"))
    }
    assert not delivery
    assert "markdown_it" not in loaded
    assert "markertools_adapters" not in loaded


def test_every_public_name_imports_and_is_the_defining_object() -> None:
    code = (
        "import markertools\n"
        "from markertools import *\n"
        "names = markertools.__all__\n"
        "missing = [n for n in names if n not in globals()]\n"
        "assert not missing, missing\n"
        "assert set(names) <= set(dir(markertools))\n"
        "from markertools import parse_turn, deliver_turn, Msg\n"
        "from markertools.parse.turn import parse_turn as p\n"
        "assert parse_turn is p\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    for name in markertools.__all__:
        defining = importlib.import_module(markertools._EXPORTS[name])
        assert getattr(markertools, name) is getattr(defining, name)
    assert sorted(markertools._EXPORTS) == sorted(markertools.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'parse_trun'"):
        markertools.parse_trun  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from markertools import not_a_name", {})
