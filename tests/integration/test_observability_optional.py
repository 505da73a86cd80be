"""Without opentelemetry and sentry-sdk installed, nothing of them is imported and nothing
changes: a fresh interpreter in which both cannot be imported loads the app, the worker's task
class, the beat's ticker and the publishers, and runs the hooks as no-ops."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys

class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("opentelemetry", "sentry_sdk"):
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, Missing())
import django
django.setup()
import scheduler_app.observability.logs, scheduler_app.publishing
import scheduler_app.tasks, scheduler_app.ticker
from scheduler_app.observability import otel, sentry, tracing
assert otel.api is None and sentry.sentry_sdk is None
assert not otel.configured() and not sentry.enabled()
assert tracing.current_ids() is None
with tracing.running("0b5e1d4c-6b1f-4f43-9d53-4d8b2f1e0c11", {}) as run:
    assert run.span is None
with tracing.handing_off([]) as spans:
    spans.end([])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("opentelemetry", "sentry_sdk")))
"""


def test_nothing_that_is_not_installed_is_imported(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "PROJECT_VAR_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
