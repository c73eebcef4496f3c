#!/usr/bin/env python3
# Owns: a throwaway PostgreSQL cluster for tests and benchmarks: find (or, as root on
# Debian, install) the server binaries, initdb a fresh cluster in a temporary directory
# (trust auth, loopback only, unix socket inside the directory, durability off), start it
# on a free port, print its DSN; stop it and delete the directory afterwards.
#
# Must never: touch an existing cluster, listen on anything but 127.0.0.1, or leave a
# running server behind when it reports failure.
#
# Invariants:
#   Rule 1: `start` prints shell assignments (MARKERTOOLS_PG_DSN, MARKERTOOLS_PG_DIR) on
#           stdout and exits 0 only when the server accepts connections; otherwise it
#           cleans up, explains on stderr and exits non-zero.
#   Rule 2: `stop DIR` only acts on a directory this script created (marker file).
#   Rule 3: the server never runs as root: as root, initdb/pg_ctl run as an unprivileged
#           OS user (`postgres`, created when missing) who owns the temporary directory.
#
# Standard library only: it runs before (and without) the project's virtualenv.
#
# Usage:
#   pg_test_server.py start            -> prints  MARKERTOOLS_PG_DSN=... MARKERTOOLS_PG_DIR=...
#   pg_test_server.py stop DIR
#   pg_test_server.py halt DIR         -> stop the server, keep its data (a database outage)
#   pg_test_server.py resume DIR       -> start it again on the same port
#   pg_test_server.py run -- CMD ...   -> start, run CMD with the env set, stop; CMD's status
from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARKER = ".markertools-pg-test-server"
SUPERUSER = "postgres"
DATABASE = "postgres"
OS_USER = os.environ.get("MARKERTOOLS_PG_OS_USER", "postgres")
START_ATTEMPTS = 3
USAGE = "usage: pg_test_server.py start | stop DIR | halt DIR | resume DIR | run -- CMD..."


def _log(text: str) -> None:
    sys.stderr.write(f"pg_test_server: {text}\n")


def _find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: $PG_BINDIR, PATH, then Debian's layout."""
    candidates: list[Path] = []
    if os.environ.get("PG_BINDIR"):
        candidates.append(Path(os.environ["PG_BINDIR"]))
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(Path(v) for v in versions)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


def _install() -> None:
    """As root on a Debian-like system, install the server package (quietly)."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return
    _log("PostgreSQL binaries not found; installing the 'postgresql' package")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "postgresql"]):
        subprocess.run(cmd, env=env, check=False, stdout=subprocess.DEVNULL)


def _os_user() -> pwd.struct_passwd | None:
    """The unprivileged account that runs the server when we are root (None = ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(OS_USER)
    except KeyError:
        pass
    _log(f"creating system user {OS_USER!r} to run the test server")
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OS_USER],
        check=False,
    )
    return pwd.getpwnam(OS_USER)


def _run(
    cmd: list[str], user: pwd.struct_passwd | None, **kw: object
) -> subprocess.CompletedProcess[str]:
    extra: dict[str, object] = {}
    if user is not None:
        extra = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    env = dict(os.environ, LC_ALL="C", LANG="C")
    if user is not None:
        env["HOME"] = user.pw_dir or "/"
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        cmd, text=True, capture_output=True, env=env, check=False, **extra, **kw
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server_conf(port: int, socket_dir: Path) -> str:
    return "\n".join(
        [
            "listen_addresses = '127.0.0.1'",
            f"port = {port}",
            f"unix_socket_directories = '{socket_dir}'",
            "max_connections = 200",
            "fsync = off",  # throwaway cluster: durability buys nothing here
            "synchronous_commit = off",
            "full_page_writes = off",
            "shared_buffers = 32MB",
            "log_min_messages = warning",
            "",
        ]
    )


def start() -> tuple[str, Path]:
    bindir = _find_bindir()
    if bindir is None:
        _install()
        bindir = _find_bindir()
    if bindir is None:
        how = (
            "install the 'postgresql' package"
            if os.geteuid() == 0
            else "they cannot be installed without root: install PostgreSQL (or ask for it), "
            "set PG_BINDIR to a directory holding initdb and pg_ctl, or point "
            "MARKERTOOLS_PG_DSN at an existing server"
        )
        raise RuntimeError(f"no PostgreSQL server binaries (initdb, pg_ctl) found; {how}")
    user = _os_user()
    base = Path(tempfile.mkdtemp(prefix="markertools-pg-"))
    (base / MARKER).write_text("created by scripts/pg_test_server.py\n")
    data = base / "data"
    sock = base / "sock"
    sock.mkdir()
    if user is not None:
        for path in (base, sock):
            os.chown(path, user.pw_uid, user.pw_gid)
    try:
        init = _run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            user,
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed: {init.stderr.strip() or init.stdout.strip()}")
        last_error = ""
        for _attempt in range(START_ATTEMPTS):
            port = _free_port()
            with open(data / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
                conf.write(_server_conf(port, sock))
            proc = _run(
                [
                    str(bindir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(base / "server.log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
                user,
            )
            if proc.returncode == 0:
                dsn = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{DATABASE}"
                _wait_ready(bindir, port, user)
                return dsn, base
            log = base / "server.log"
            last_error = log.read_text(errors="replace")[-2000:] if log.exists() else proc.stderr
        raise RuntimeError(f"the server did not start: {last_error.strip()}")
    except BaseException:
        stop(base)
        raise


def _wait_ready(bindir: Path, port: int, user: pwd.struct_passwd | None) -> None:
    isready = bindir / "pg_isready"
    if not isready.is_file():
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _run([str(isready), "-h", "127.0.0.1", "-p", str(port), "-q"], user).returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the server on port {port} does not accept connections")


def stop(base: Path) -> None:
    base = Path(base)
    if not (base / MARKER).is_file():
        raise RuntimeError(f"{base} was not created by pg_test_server.py; refusing to touch it")
    data = base / "data"
    bindir = _find_bindir()
    if bindir is not None and (data / "postmaster.pid").exists():
        user = _os_user()
        result = _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], user)
        if result.returncode != 0:
            _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], user)
    shutil.rmtree(base, ignore_errors=True)


def halt(base: Path) -> None:
    """Stop the server of `base` (fast: connections are cut), keeping its data: the
    tests' database outage (FLT-3). `resume` starts it again on the same port."""
    base = Path(base)
    if not (base / MARKER).is_file():
        raise RuntimeError(f"{base} was not created by pg_test_server.py; refusing to touch it")
    bindir = _find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries found")
    result = _run([str(bindir / "pg_ctl"), "-D", str(base / "data"), "-m", "fast", "-w", "stop"], _os_user())
    if result.returncode != 0:
        raise RuntimeError(f"pg_ctl stop failed: {result.stderr.strip()}")


def resume(base: Path) -> None:
    """Start a halted server of `base` again (the same port and data)."""
    base = Path(base)
    if not (base / MARKER).is_file():
        raise RuntimeError(f"{base} was not created by pg_test_server.py; refusing to touch it")
    bindir = _find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries found")
    user = _os_user()
    data = base / "data"
    result = _run(
        [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w", "-t", "60", "start"],
        user,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pg_ctl start failed: {result.stderr.strip()}")


def run(cmd: list[str]) -> int:
    if not cmd:
        _log("run: no command given")
        return 2
    dsn, base = start()
    try:
        env = dict(os.environ, MARKERTOOLS_PG_DSN=dsn, MARKERTOOLS_PG_DIR=str(base))
        return subprocess.call(cmd, env=env)
    finally:
        stop(base)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in {"-h", "--help"}:
        sys.stdout.write(USAGE + "\n")
        return 0 if argv else 2
    action, rest = argv[0], argv[1:]
    try:
        if action == "start":
            dsn, base = start()
            sys.stdout.write(
                f"MARKERTOOLS_PG_DSN={shlex.quote(dsn)}\nMARKERTOOLS_PG_DIR={shlex.quote(str(base))}\n"
            )
            return 0
        if action == "stop" and len(rest) == 1:
            stop(Path(rest[0]))
            return 0
        if action == "halt" and len(rest) == 1:
            halt(Path(rest[0]))
            return 0
        if action == "resume" and len(rest) == 1:
            resume(Path(rest[0]))
            return 0
        if action == "run":
            return run(rest[1:] if rest[:1] == ["--"] else rest)
    except (RuntimeError, OSError, KeyError) as exc:
        _log(str(exc))
        return 3
    _log(USAGE)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
