# Owns: an isolated, offline CODEX_HOME for `codex app-server` against a local fake
# provider (`make_codex_home`), the child's environment (`codex_env`), and finding the
# native executable inside the npm package (`native_binary`). Every network feature
# codex 0.169.0 has is switched off; the ChatGPT backend and proxies point at a dead
# loopback port, so nothing leaves the machine.
from __future__ import annotations

import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markertools_adapters.errors import BinaryNotFound

TEMPLATE = Path(__file__).resolve().parents[1] / "data" / "codex-model-template.json"
# one ModelInfo entry (gpt-5.5) from the catalog bundled in codex 0.169.0

# Features that reach the network (github.com / chatgpt.com / api.openai.com) or spawn
# helpers at startup and are useless offline.  `codex features list` shows them all.
OFFLINE_DISABLED_FEATURES = [
    "plugins",
    "remote_plugin",
    "plugin_sharing",
    "apps",
    "tool_suggest",
    "api_key_model_discovery",
    "in_app_updates",
    "image_generation",
    "browser_use",
    "browser_use_external",
    "computer_use",
    "in_app_browser",
    "daemon_auto_start",
    "unbounded_connection_retries",
    "code_mode_host",
    "skill_search",
    "skill_mcp_dependency_install",
    "guardian_approval",
]


def native_binary(node_modules: Path | str) -> Path:
    """The native codex executable inside the npm package (bypasses the Node wrapper)."""
    hits = sorted(Path(node_modules).glob("@openai/codex-*/vendor/*/bin/codex"))
    if not hits:
        raise BinaryNotFound(f"no native codex binary under {node_modules}")
    return hits[0]


def model_entry(
    slug: str,
    *,
    display_name: str | None = None,
    description: str = "fake model",
    is_default_priority: int = 1,
) -> dict[str, Any]:
    tpl: dict[str, Any] = json.loads(TEMPLATE.read_text())
    m = copy.deepcopy(tpl)
    m.update(
        slug=slug,
        display_name=display_name or slug,
        description=description,
        prefer_websockets=False,
        upgrade=None,
        availability_nux=None,
        priority=is_default_priority,
        service_tiers=[],
        additional_speed_tiers=[],
        default_service_tier=None,
        supports_search_tool=False,
    )
    return m


def toml_str(s: str) -> str:
    return json.dumps(s)  # JSON string escaping is valid TOML basic-string escaping for our inputs


def make_codex_home(
    home: Path | str,
    base_url: str,
    *,
    models: Sequence[str] = ("fake-model",),
    model: str | None = None,
    approval_policy: str = "on-request",
    sandbox_mode: str = "workspace-write",
    request_max_retries: int = 0,
    stream_max_retries: int = 0,
    stream_idle_timeout_ms: int = 300_000,
    extra_toml: str = "",
) -> Path:
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    catalog = home / "models.json"
    catalog.write_text(
        json.dumps(
            {"models": [model_entry(s, is_default_priority=i + 1) for i, s in enumerate(models)]},
            indent=1,
        )
    )
    features = "\n".join(f"{f} = false" for f in OFFLINE_DISABLED_FEATURES)
    (home / "config.toml").write_text(f"""\
model = {toml_str(model or models[0])}
model_provider = "fake"
approval_policy = {toml_str(approval_policy)}
sandbox_mode = {toml_str(sandbox_mode)}
model_catalog_json = {toml_str(str(catalog))}
check_for_update_on_startup = false
web_search = "disabled"
# nothing may leave the box: ChatGPT backend (remote control, plugins export, ...) -> dead loopback port
chatgpt_base_url = "http://127.0.0.1:9/backend-api/"

[model_providers.fake]
name = "Fake"
base_url = {toml_str(base_url)}
wire_api = "responses"
env_key = "FAKE_KEY"
request_max_retries = {request_max_retries}
stream_max_retries = {stream_max_retries}
stream_idle_timeout_ms = {stream_idle_timeout_ms}
supports_websockets = false

[analytics]
enabled = false

[agents]
enabled = false

[features]
{features}
{extra_toml}
""")
    return home


def codex_env(home: Path | str, *, block_proxy: bool = True) -> dict[str, str]:
    """Minimal environment: no inherited OPENAI_API_KEY/CODEX_* leaking in.

    ``block_proxy`` points HTTP(S)_PROXY at a dead local port (127.0.0.1:9) with
    NO_PROXY for loopback, as a belt-and-braces guard against outbound traffic.
    """
    home = str(home)
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": home,
        "CODEX_HOME": home,
        "FAKE_KEY": "sk-fake-offline",
        "RUST_LOG": os.environ.get("CODEX_TEST_RUST_LOG", "warn"),
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }
    if block_proxy:
        env.update(
            {
                "HTTP_PROXY": "http://127.0.0.1:9",
                "HTTPS_PROXY": "http://127.0.0.1:9",
                "ALL_PROXY": "http://127.0.0.1:9",
                "http_proxy": "http://127.0.0.1:9",
                "https_proxy": "http://127.0.0.1:9",
                "all_proxy": "http://127.0.0.1:9",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
    return env
