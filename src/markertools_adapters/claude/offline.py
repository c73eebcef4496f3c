# Owns: an isolated, offline Claude Code home against a local fake of the Messages API
# (`make_claude_home`), the environment of a `claude` child that talks only to it
# (`claude_env`: its own HOME and CLAUDE_CONFIG_DIR, ANTHROPIC_BASE_URL on loopback, a
# fake key, every non-essential network feature of Claude Code 2.1.332 off, proxies at a
# dead loopback port), and finding the native executable of the pinned install
# (`native_binary`, `find_claude`).
#
# Must never: let anything of the caller's own Claude login or keys (ANTHROPIC_*,
# CLAUDE_*) into the child's environment.
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from markertools_adapters.errors import BinaryNotFound

FAKE_KEY: Final[str] = "sk-ant-markertools-offline-fake"
DEAD_PROXY: Final[str] = "http://127.0.0.1:9"  # discard port: nothing listens, fails at once
# Claude Code's switches for traffic beside the model calls (telemetry, error reports,
# the auto-updater, feature flags); checked against 2.1.332.
OFFLINE_SWITCHES: Final[dict[str, str]] = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
_KEPT: Final[tuple[str, ...]] = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "PYTHONPATH")


def make_claude_home(home: Path | str) -> Path:
    """Create `home` (0700) as the HOME and `home/.claude` as the CLAUDE_CONFIG_DIR of an
    offline Claude Code; returns `home`. Claude Code writes its sessions
    (`.claude/projects/<dir>/<session>.jsonl`) and shell snapshots there."""
    home = Path(home)
    (home / ".claude").mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)
    return home


def config_dir(home: Path | str) -> Path:
    """The CLAUDE_CONFIG_DIR of a home made by `make_claude_home`."""
    return Path(home) / ".claude"


def claude_env(
    home: Path | str,
    base_url: str,
    *,
    block_proxy: bool = True,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a `claude` child against the fake at `base_url`. Built from
    `base` (default: a minimal one - PATH, LANG, TZ, TMPDIR, PYTHONPATH of this
    process), without any ANTHROPIC_* / CLAUDE_* variable of the caller. With
    `block_proxy`, HTTP(S)_PROXY point at a dead loopback port and NO_PROXY names the
    loopback, so only the fake is reachable."""
    source = dict(base) if base is not None else {k: v for k, v in os.environ.items() if k in _KEPT}
    env = {
        k: v
        for k, v in source.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_")) and k != "CLAUDECODE"
    }
    env.setdefault("PATH", os.defpath)
    env.update(OFFLINE_SWITCHES)
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(config_dir(home)),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY=FAKE_KEY,
    )
    if block_proxy:
        for name in (
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
        ):
            env[name] = DEAD_PROXY
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
    return env


def native_binary(node_modules: Path | str) -> Path:
    """The native `claude` executable inside the npm install (the platform package)."""
    hits = sorted(Path(node_modules).glob("@anthropic-ai/claude-code-*/claude"))
    if not hits:
        raise BinaryNotFound(f"no native claude binary under {node_modules}")
    return hits[0]


def find_claude(option: str | None = None) -> str | None:
    """The Claude Code CLI to run: `option`, else $MARKERTOOLS_CLAUDE_BIN, else the
    repository's pinned install (scripts/install_claude.sh, under .cache/claude of the
    current directory or of this source tree), else `claude` on PATH; None when none
    of them is an executable file."""
    import shutil

    given = option or os.environ.get("MARKERTOOLS_CLAUDE_BIN")
    candidates: list[str] = []
    if given:
        found = shutil.which(given) if os.sep not in given else None
        candidates.append(found or given)
    else:
        for root in (Path.cwd(), Path(__file__).resolve().parents[3]):
            with_modules = root / ".cache" / "claude" / "node_modules"
            candidates += [
                str(p) for p in sorted(with_modules.glob("@anthropic-ai/claude-code-*/claude"))
            ]
        on_path = shutil.which("claude")
        if on_path:
            candidates.append(on_path)
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


__all__ = [
    "FAKE_KEY",
    "OFFLINE_SWITCHES",
    "claude_env",
    "config_dir",
    "find_claude",
    "make_claude_home",
    "native_binary",
]
