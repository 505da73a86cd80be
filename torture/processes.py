"""Real ``celery beat`` and ``celery worker`` processes, started, killed and restarted by the
harness; each keeps its log under the run directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
QUEUE = "torture"


@dataclass
class Proc:
    kind: str  # "beat" or "worker"
    name: str
    env: dict[str, str]
    directory: Path
    concurrency: int = 8
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    kills: int = 0
    rss_samples: list[tuple[float, int]] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    def command(self) -> list[str]:
        base = [sys.executable, "-m", "celery", "-A", "project"]
        if self.kind == "beat":
            return [
                *base, "beat", "-S", "torture.beat:TortureScheduler", "--loglevel=INFO",
                f"--schedule={self.directory / (self.name + '.db')}", "--pidfile=",
            ]  # fmt: skip
        return [
            *base, "worker", "--pool=threads", f"--concurrency={self.concurrency}",
            "--loglevel=INFO", "--include=torture.tasks", f"--queues={QUEUE}",
            f"--hostname={self.name}@%h", "--without-gossip", "--without-mingle",
            "--without-heartbeat", "--prefetch-multiplier=1",
        ]  # fmt: skip

    def start(self) -> None:
        if self.alive():
            return
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n===== start {self.starts} at {time.time():.3f} =====\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command(),
                cwd=REPO_ROOT,
                env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no cleanup, no ack, no lease released, whatever it was doing."""
        if self.alive():
            assert self.process is not None
            self.kills += 1
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 20.0) -> None:
        if not self.alive():
            return
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)

    def rss(self) -> int | None:
        """Resident memory of the process in bytes (Linux /proc), None when not running."""
        if not self.alive():
            return None
        assert self.process is not None
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def ready(self) -> bool:
        text = self.tail(200_000)
        marker = "durable scheduler ready" if self.kind == "beat" else " ready."
        return marker in text.rsplit("===== start", 1)[-1]
