"""Shared plumbing for benchmarks: sampling statistics, machine facts, and the two outputs.

``docs/performance.md`` (today's figures) is shared by every benchmark: each one owns exactly
one ``## `` section and ``write_section`` replaces only that section, keeping the rest of the
file intact (the "Today's figures" table at its top is written by hand). The section a run
replaces is not lost: unless it is the same run rendered again, it is appended to the last
section of ``docs/performance-history.md`` (``HISTORY_HEADING``), the page the earlier runs
are kept on. ``bench/results/<name>.json`` holds the same numbers for comparing commits.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_MD = ROOT / "docs" / "performance.md"
HISTORY_NAME = "performance-history.md"
"""Beside ``PERFORMANCE_MD``: the runs it no longer shows."""
HISTORY_HEADING = "Replaced sections of the performance page"
RESULTS_DIR = ROOT / "bench" / "results"

INTRO = """\
# Performance

Today's figures: the latest run of each benchmark, the command that made it and its date.
Benchmarks live in `bench/` (not in the pytest suite). Each `make bench*` target measures on
the machine it runs on, rewrites its own section below and writes `bench/results/<name>.json`
(with the git commit) so runs on different commits can be compared. Earlier runs are in the
[performance history](performance-history.md).

Machine of the first run: {machine}.
"""

HISTORY_INTRO = """\
# Performance history

The earlier runs behind today's figures ([performance](performance.md)).

## {heading}

When a benchmark run rewrites its section of [the performance page](performance.md) with the
figures of another run, `bench/report.py` appends the section it replaced here, under its
heading and the date it was replaced (the section's own `Run:` line gives its run).
"""


def _run(*command: str) -> str:
    try:
        return subprocess.run(
            command, capture_output=True, text=True, check=True, cwd=ROOT, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _total_memory() -> str:
    for line in _run("free", "-h").splitlines():
        if line.startswith("Mem:"):
            return line.split()[1]
    return "unknown"


def machine() -> dict[str, Any]:
    """Facts about this machine and checkout (``nproc``, ``free -h``, Python, git commit)."""
    return {
        "cpus": _run("nproc") or str(os.cpu_count()),
        "cpu_model": _cpu_model(),
        "memory": _total_memory(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "commit": _run("git", "rev-parse", "HEAD") or None,
        # Changed code only: not the results and pages a run writes, not untracked files
        # (a checkout's .venv link).
        "dirty": bool(
            _run(
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":!bench/results",
                ":!docs",
            )
        ),
    }


def describe_machine(facts: dict[str, Any]) -> str:
    return (
        f"{facts['cpus']} CPUs ({facts['cpu_model']}), {facts['memory']} RAM, "
        f"{facts['implementation']} {facts['python']} on {facts['platform']}"
    )


def load_average() -> float | None:
    """The 1-minute load average (other work on the machine skews every number)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def describe_load(before: float | None, after: float | None) -> str:
    """A sentence on the load; flags other work (the run itself adds about 1 afterwards)."""
    if before is None or after is None:
        return ""
    text = f"1-minute load average {before:g} before, {after:g} after the run"
    if max(before, after - 1) >= 0.5:
        text += " (other work was running: expect slower, noisier numbers than on an idle machine)"
    return text + "."


def describe_run(facts: dict[str, Any], command: str, when: str | None = None) -> str:
    """``command`` on its date (``when``: the results' ISO timestamp; default now), commit."""
    commit = (facts["commit"] or "unknown")[:12] + (
        " (uncommitted changes)" if facts["dirty"] else ""
    )
    moment = datetime.fromisoformat(when).astimezone(UTC) if when else now()
    stamp = moment.strftime("%Y-%m-%d %H:%M UTC")
    return f"`{command}` on {stamp}, commit {commit}; {describe_machine(facts)}."


def now() -> datetime:
    return datetime.now(UTC)


def percentile(samples: list[float], fraction: float) -> float:
    """Linear-interpolated percentile of ``samples`` (``fraction`` in 0..1)."""
    ordered = sorted(samples)
    position = (len(ordered) - 1) * fraction
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(samples: list[float], digits: int = 3) -> dict[str, float]:
    stats = {
        "median": statistics.median(samples),
        "p10": percentile(samples, 0.10),
        "p90": percentile(samples, 0.90),
        "min": min(samples),
        "max": max(samples),
    }
    return {"n": len(samples)} | {key: round(value, digits) for key, value in stats.items()}


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _section_pattern(title: str) -> re.Pattern[str]:
    """The ``## `` section titled ``title``: its heading line up to the next ``## `` or the end."""
    return re.compile(rf"^{re.escape(title)}[ \t]*\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)


def _run_line(section: str) -> str | None:
    """The section's ``Run: ...`` line (which command, when, which commit), if it has one."""
    found = re.search(r"^Run: .*$", section, re.MULTILINE)
    return found.group(0) if found else None


def write_section(heading: str, body: str, facts: dict[str, Any]) -> Path:
    """Replace (or append) the ``## heading`` section of docs/performance.md with ``body``.

    The section replaced goes to the history page (``archive_section``) when it shows another
    run than ``body`` (their ``Run:`` lines differ): rendering the same run again keeps nothing.
    """
    title = f"## {heading}"
    if PERFORMANCE_MD.exists():
        text = PERFORMANCE_MD.read_text()
    else:
        text = INTRO.format(machine=describe_machine(facts))
    section = f"{title}\n\n{body.strip()}\n"
    pattern = _section_pattern(title)
    if found := pattern.search(text):
        replaced = found.group(0)
        if _run_line(replaced) not in (None, _run_line(section)):
            archive_section(heading, replaced)
        text = pattern.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    PERFORMANCE_MD.parent.mkdir(parents=True, exist_ok=True)
    PERFORMANCE_MD.write_text(text)
    return PERFORMANCE_MD


def archive_section(heading: str, section: str) -> Path:
    """File a replaced ``## heading`` section at the end of the history page's last section.

    It goes under ``### heading, replaced on DATE`` (its own headings one level down), after
    whatever was filed before, so the page reads oldest first.
    """
    history = PERFORMANCE_MD.with_name(HISTORY_NAME)
    title = f"## {HISTORY_HEADING}"
    if history.exists():
        text = history.read_text()
    else:
        text = HISTORY_INTRO.format(heading=HISTORY_HEADING)
    body = section.split("\n", 1)[1].strip() if "\n" in section else ""
    body = re.sub(r"^(#{3,5}) ", r"#\1 ", body, flags=re.MULTILINE)
    filed = f"### {heading}, replaced on {now():%Y-%m-%d}\n\n{body}\n"
    pattern = _section_pattern(title)
    if found := pattern.search(text):
        end = found.end()
        text = text[:end].rstrip() + "\n\n" + filed + ("\n" + text[end:] if text[end:] else "")
    else:
        text = text.rstrip() + f"\n\n{title}\n\n" + filed
    history.write_text(text.rstrip() + "\n")
    return history


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


def measured_and_written(
    name: str,
    heading: str,
    command: str,
    measure: Callable[[], Any],
    render: Callable[[dict[str, Any], dict[str, Any], str], str],
    *,
    write: bool,
    **settings: Any,
) -> int:
    """Run ``measure`` between two looks at the load, print what ``render`` makes of it and,
    with ``write``, keep it: ``bench/results/<name>.json`` and the page's ``## heading``."""
    facts = machine()
    load_before = load_average()
    results = {
        **settings,
        "figures": measure(),
        "load_before": load_before,
        "load_after": load_average(),
    }
    text = render(results, facts, command)
    print(text)
    if write:
        write_json(name, {"facts": facts, "command": command, **results})
        write_section(heading, text, facts)
    return 0
