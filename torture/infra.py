"""The harness's own servers: a PostgreSQL cluster and a Redis server it may restart at will,
and a TCP proxy on loopback that can cut the network between the beats and the database.

They are private to the harness (own data directory, own ports), so restarting them never
disturbs anything else on the machine.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


class InfraError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise InfraError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def _pg_bindir() -> Path:
    configured = shutil.which("pg_config")
    if configured:
        out = subprocess.run([configured, "--bindir"], capture_output=True, text=True)
        candidate = Path(out.stdout.strip())
        if (candidate / "initdb").exists():
            return candidate
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise InfraError(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: install the PostgreSQL "
            "server package (Debian: postgresql) or put pg_config on PATH"
        )
    return Path(found[-1]).parent


@dataclass
class Postgres:
    """A throw-away PostgreSQL cluster in ``directory`` on ``port``.

    ``fsync=off`` for speed: the faults kill processes, never the machine, and the OS keeps
    what was written. Commits stay synchronous: with ``synchronous_commit=off`` an
    ``immediate`` stop loses commits PostgreSQL has already acknowledged (a run's effect
    vanished while its later ``succeeded`` survived), which no production database does."""

    directory: Path
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self.bindir = _pg_bindir()
        # As root, PostgreSQL refuses to run: use the postgres system user, with the cluster
        # in a directory of its own under /tmp (the checkout may sit in a directory that user
        # cannot enter, e.g. one made by mktemp -d, and so may a nox session's TMPDIR).
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            # /tmp itself: nox points TMPDIR into the checkout for its sessions.
            shared = "/tmp" if os.path.isdir("/tmp") else None
            self.directory = Path(tempfile.mkdtemp(prefix="torture-pg-", dir=shared))
        self.data = self.directory / "data"
        self.log = self.directory / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/torture"

    def _run(self, *args: str) -> None:
        result = subprocess.run([*self._as, *args], capture_output=True, text=True, cwd="/")
        if result.returncode != 0:
            raise InfraError(f"{' '.join(args)} failed: {result.stderr.strip()[-2000:]}")

    def init(self) -> None:
        if self.directory.exists():
            shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True)
        if self._as:
            shutil.chown(self.directory, "postgres", "postgres")
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8",
        )  # fmt: skip
        self.start()
        subprocess.run(
            [str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
             "-U", "postgres", "torture"],
            check=True,
        )  # fmt: skip

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} -c fsync=off "
            "-c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", options, "-w", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, down: float) -> None:
        """Stop (every connection drops), stay down ``down`` seconds, start again."""
        self.stop("immediate")
        time.sleep(down)
        self.start()

    def destroy(self) -> None:
        with contextlib.suppress(InfraError):
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class Redis:
    """A private, non-persistent Redis server (like the machine's: messages in flight are lost
    when it restarts; the outbox and the reconciler must make up for that)."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    # Addresses it listens on; the multi-host harness adds its bridge's (torture/multihost).
    bind: tuple[str, ...] = ("127.0.0.1",)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise InfraError("redis-server not found: install Redis (Debian: redis-server)")
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", *self.bind, "--save", "",
             "--appendonly", "no", "--dir", str(self.directory),
             # No password: served beyond loopback only on the harness's own bridge.
             "--protected-mode", "no" if set(self.bind) - {"127.0.0.1"} else "yes"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_port(self.port)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def restart(self, down: float) -> None:
        self.kill()
        time.sleep(down)
        self.start()


class Proxy:
    """A loopback TCP proxy: ``cut(seconds)`` drops every connection through it and refuses
    new ones for that long (a network partition between its clients and the server)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = int(self.listener.getsockname()[1])
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._cut_until = 0.0
        self._closed = False
        threading.Thread(target=self._accept, name="proxy", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self._cut_until:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), 5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                self._drop(s)

    def _drop(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    def cut(self, seconds: float) -> None:
        self._cut_until = time.monotonic() + seconds
        with self._lock:
            victims = list(self._sockets)
        for sock in victims:
            self._drop(sock)

    def close(self) -> None:
        self._closed = True
        self.cut(0)
        self.listener.close()
