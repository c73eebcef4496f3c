"""The protocol this project uses still exists in the pinned binary's JSON Schema: every
(method, field path) of `markertools_adapters.codex.schema_use.USED_SCHEMA` resolves in
the files `codex app-server generate-json-schema --out DIR` writes, and every enum value
of `USED_VALUES` is allowed. A Codex update that drops or renames one fails here.

Schema layout (0.169.0): ClientRequest.json, ClientNotification.json,
ServerNotification.json and ServerRequest.json each hold a `oneOf` of messages
(`properties.method.enum` = [method], `properties.params` = a `$ref` into the same
file's `definitions`); a request's response is its own file named after the params
(`FooParams` -> `FooResponse.json`), in the top directory (server requests), `v2/` or
`v1/` (initialize)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.codex import codex_bin

from markertools_adapters.codex.schema_use import RESPONSE_SCHEMAS, USED_SCHEMA, USED_VALUES

Schema = dict[str, Any]
MESSAGE_FILES = (
    "ClientRequest.json",
    "ClientNotification.json",
    "ServerNotification.json",
    "ServerRequest.json",
)


@pytest.fixture(scope="module")
def schema_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("codex-schema")
    done = subprocess.run(
        [codex_bin(), "app-server", "generate-json-schema", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out


class Resolver:
    """Field paths in one schema file (its `definitions` are the `$ref` targets)."""

    def __init__(self, root: Schema) -> None:
        self.root = root

    def deref(self, node: Schema) -> Schema:
        seen = 0
        while "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/"), ref
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = target[part]
            node, seen = target, seen + 1
            assert seen < 50, f"$ref loop at {ref}"
        return node

    def variants(self, node: Schema) -> Iterator[Schema]:
        """`node` and every alternative it combines (anyOf / oneOf / allOf), dereferenced."""
        stack, seen = [node], 0
        while stack:
            current = self.deref(stack.pop())
            seen += 1
            assert seen < 10_000
            yield current
            for key in ("anyOf", "oneOf", "allOf"):
                stack.extend(current.get(key, []))

    def step(self, nodes: list[Schema], name: str) -> list[Schema]:
        found: list[Schema] = []
        for node in nodes:
            for variant in self.variants(node):
                if name == "[]":
                    items = variant.get("items")
                    if isinstance(items, dict):
                        found.append(items)
                elif name in variant.get("properties", {}):
                    found.append(variant["properties"][name])
        return found

    def resolve(self, node: Schema, path: list[str]) -> list[Schema]:
        nodes = [node]
        for name in path:
            nodes = self.step(nodes, name)
            if not nodes:
                return []
        return nodes

    def enum_values(self, nodes: list[Schema]) -> set[str]:
        values: set[str] = set()
        for node in nodes:
            for variant in self.variants(node):
                values.update(v for v in variant.get("enum", []) if isinstance(v, str))
                if isinstance(variant.get("const"), str):
                    values.add(variant["const"])
        return values


def _split(path: str) -> list[str]:
    """ "result.data[].id" -> ["result", "data", "[]", "id"]."""
    parts: list[str] = []
    for part in path.split("."):
        while part.endswith("[]"):
            part = part[:-2]
            parts.extend([part, "[]"] if part else ["[]"])
            part = ""
        if part:
            parts.append(part)
    return parts


class Protocol:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.messages: dict[str, tuple[str, Schema, Resolver]] = {}
        for name in MESSAGE_FILES:
            root = json.loads((directory / name).read_text(encoding="utf-8"))
            resolver = Resolver(root)
            for variant in root["oneOf"]:
                for method in variant["properties"]["method"].get("enum", []):
                    self.messages.setdefault(method, (name, variant, resolver))

    def response(self, method: str) -> tuple[Schema, Resolver]:
        name = RESPONSE_SCHEMAS.get(method)
        if name is None:
            kind, variant, _ = self.messages[method]
            params = variant["properties"].get("params")
            refs = [v.get("$ref", "") for v in [params or {}, *(params or {}).get("anyOf", [])]]
            ref = next((r for r in refs if r.endswith("Params")), None)
            assert ref, f"{method} ({kind}): no params schema to name its response after"
            name = ref.rsplit("/", 1)[1].removesuffix("Params") + "Response"
        for folder in (self.dir, self.dir / "v2", self.dir / "v1"):
            file = folder / f"{name}.json"
            if file.is_file():
                root = json.loads(file.read_text(encoding="utf-8"))
                return root, Resolver(root)
        raise AssertionError(f"{method}: no {name}.json in {self.dir}, v2/ or v1/")

    def resolve(self, method: str, path: str) -> tuple[list[Schema], Resolver]:
        parts = _split(path)
        if parts and parts[0] == "result":
            root, resolver = self.response(method)
            return resolver.resolve(root, parts[1:]), resolver
        _, variant, resolver = self.messages[method]
        return resolver.resolve({"properties": variant["properties"]}, parts), resolver


@pytest.fixture(scope="module")
def protocol(schema_dir: Path) -> Protocol:
    return Protocol(schema_dir)


@pytest.mark.rule("DOT-3")
def test_every_used_method_exists(protocol: Protocol) -> None:
    missing = sorted({m for m, _ in USED_SCHEMA if m not in protocol.messages})
    assert missing == [], f"methods gone from the pinned Codex schema: {missing}"


@pytest.mark.rule("DOT-3")
def test_every_used_field_exists(protocol: Protocol) -> None:
    missing = [
        f"{method} {path}"
        for method, path in USED_SCHEMA
        if path and method in protocol.messages and not protocol.resolve(method, path)[0]
    ]
    assert missing == [], "fields gone from the pinned Codex schema:\n" + "\n".join(missing)


@pytest.mark.rule("DOT-3")
def test_every_value_we_send_is_allowed(protocol: Protocol) -> None:
    wrong = []
    for (method, path), values in USED_VALUES.items():
        nodes, resolver = protocol.resolve(method, path)
        allowed = resolver.enum_values(nodes)
        wrong += [
            f"{method} {path} = {v!r} (allowed: {sorted(allowed)})"
            for v in values
            if v not in allowed
        ]
    assert wrong == [], "\n".join(wrong)


def test_the_resolver_finds_what_is_there_and_only_that(protocol: Protocol) -> None:
    # a guard against a resolver that accepts everything (or nothing)
    assert protocol.resolve("turn/completed", "params.turn.status")[0]
    assert not protocol.resolve("turn/completed", "params.turn.noSuchField")[0]
    assert not protocol.resolve("model/list", "result.data[].noSuchField")[0]
    assert not protocol.resolve("thread/start", "params.noSuchParam")[0]
    nodes, resolver = protocol.resolve("turn/completed", "params.turn.status")
    assert {"completed", "interrupted", "failed", "inProgress"} <= resolver.enum_values(nodes)
    assert _split("result.data[].efforts[].x") == ["result", "data", "[]", "efforts", "[]", "x"]
    assert "bogus" not in resolver.enum_values(nodes)
    assert all(m in protocol.messages for m in ("initialize", "initialized", "turn/completed"))
