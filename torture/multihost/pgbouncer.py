"""A private PgBouncer in transaction pooling mode in front of the harness's PostgreSQL.

Debian's ``pgbouncer`` package brings the binary (installed with apt-get when missing; its
system service is never used). It refuses to run as root, so it runs as the ``postgres``
system user from a directory of its own, like the harness's PostgreSQL cluster.

Two pools: ``torture`` (what the beats and workers use) and ``probe`` (two server connections,
handed out most-recently-used first, so the probes in ``torture.multihost.probes`` can make a
client land on another server connection deterministically).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from torture.infra import InfraError, free_port, wait_port

BINARY = "pgbouncer"
PROBE_POOL_SIZE = 2


def ensure_installed() -> str:
    """The pgbouncer binary, installed from Debian's packages when it is missing."""
    found = shutil.which(BINARY) or shutil.which(f"/usr/sbin/{BINARY}")
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise InfraError("pgbouncer is missing: install it (Debian: apt-get install pgbouncer)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", BINARY]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        result = subprocess.run(install, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise InfraError(f"apt-get install pgbouncer failed: {result.stderr.strip()[-500:]}")
    found = shutil.which(BINARY) or shutil.which(f"/usr/sbin/{BINARY}")
    if not found:
        raise InfraError("apt-get installed pgbouncer but no pgbouncer binary is on PATH")
    return found


def version(binary: str) -> tuple[int, int]:
    """(major, minor) of ``pgbouncer --version`` ("PgBouncer 1.18.0" -> (1, 18))."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    words = out.split()
    numbers = words[1].split(".") if len(words) > 1 else []
    if len(numbers) < 2 or not all(n.isdigit() for n in numbers[:2]):
        raise InfraError(f"cannot read the version of {binary} from {out[:80]!r}")
    return int(numbers[0]), int(numbers[1])


def render_config(
    *, listen: tuple[str, ...], port: int, pg_port: int, database: str, directory: Path
) -> str:
    """pgbouncer.ini: transaction pooling, no authentication (the harness's network only)."""
    target = f"host=127.0.0.1 port={pg_port} dbname={database} user=postgres"
    return "\n".join(
        [
            "[databases]",
            f"{database} = {target}",
            f"probe = {target} pool_size={PROBE_POOL_SIZE}",
            "",
            "[pgbouncer]",
            f"listen_addr = {','.join(listen)}",
            f"listen_port = {port}",
            "unix_socket_dir =",
            "auth_type = any",
            "pool_mode = transaction",
            "max_client_conn = 500",
            "default_pool_size = 30",
            # Most recently used server connection first (the default): the probes rely on it.
            "server_round_robin = 0",
            # After PostgreSQL restarts, retry the login every second, not every 15 s.
            "server_login_retry = 1",
            "ignore_startup_parameters = extra_float_digits,options",
            f"logfile = {directory / 'pgbouncer.log'}",
            f"pidfile = {directory / 'pgbouncer.pid'}",
            "",
        ]
    )


@dataclass
class PgBouncer:
    pg_port: int
    listen: tuple[str, ...]
    database: str = "torture"
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        # /tmp itself, as for the harness's PostgreSQL (nox points TMPDIR into the checkout).
        shared = "/tmp" if os.path.isdir("/tmp") else None
        self.directory = Path(tempfile.mkdtemp(prefix="multihost-pgbouncer-", dir=shared))
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def url(self, host: str, database: str | None = None) -> str:
        return f"postgres://postgres@{host}:{self.port}/{database or self.database}"

    def start(self) -> None:
        binary = ensure_installed()
        config = self.directory / "pgbouncer.ini"
        config.write_text(
            render_config(
                listen=self.listen, port=self.port, pg_port=self.pg_port,
                database=self.database, directory=self.directory,
            )
        )  # fmt: skip
        if self._as:
            shutil.chown(self.directory, "postgres", "postgres")
            shutil.chown(config, "postgres", "postgres")
        self.process = subprocess.Popen(
            [*self._as, binary, str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd="/",
        )
        wait_port(self.port)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.directory / "pgbouncer.log").read_text(errors="replace")
        return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

    def destroy(self, keep_log: Path | None = None) -> None:
        self.stop()
        if keep_log is not None:
            keep_log.write_text(self.log())
        shutil.rmtree(self.directory, ignore_errors=True)
