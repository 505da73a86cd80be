"""The harness's output: ``torture/results/<profile>.json`` and, with ``--write``, the table in
docs/reliability.md (between the ``torture:begin`` / ``torture:end`` markers)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
DOC = REPO_ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- torture:begin -->", "<!-- torture:end -->"


def _commit() -> str:
    result = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, cwd=REPO_ROOT
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], capture_output=True, text=True, cwd=REPO_ROOT
    )
    return result.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def machine() -> str:
    return (
        f"{os.cpu_count()} CPUs, CPython {platform.python_version()} on {platform.platform()}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )


def write(
    outcomes: list[Any], profile: Any, seed: int, elapsed: float, *, docs: bool, argv: list[str]
) -> None:
    payload = {
        "profile": profile.name,
        "seed": seed,
        "commit": _commit(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "elapsed_s": round(elapsed),
        "command": "python -m torture " + " ".join(argv),
        "scenarios": {o.scenario: {**o.figures, "ok": o.ok, "line": o.line} for o in outcomes},
    }
    results = REPO_ROOT / "torture" / "results"
    results.mkdir(exist_ok=True)
    (results / f"{profile.name}.json").write_text(json.dumps(payload, indent=1, default=str))
    if docs:
        _write_doc(payload, profile)


def _faults(figures: dict[str, Any]) -> str:
    faults = figures.get("faults") or {}
    return ", ".join(f"{k.replace('_', ' ')} x{v}" for k, v in sorted(faults.items())) or "-"


def _late(figures: dict[str, Any]) -> str:
    late = figures.get("lateness_s") or {}
    if not late:
        return "-"
    return f"{late['p50']:.2f} / {late['p99']:.2f}"


def render(payload: dict[str, Any], profile: Any) -> str:
    lines = [
        BEGIN,
        f"Run: `{payload['command']}` on {payload['when'][:16].replace('T', ' ')} UTC, commit "
        f"{payload['commit']}, seed {payload['seed']}, {payload['elapsed_s']} s in all; "
        f"{payload['machine']}. Profile `{profile.name}`: {profile.schedules} schedules per "
        f"scenario, {profile.scenario_seconds:.0f} s of load ({profile.dst_seconds:.0f} s for "
        f"the DST scenarios), {profile.workers} workers x {profile.concurrency} threads, "
        "3 beats.",
        "",
        "| scenario | faults injected | slots expected | occurrences | effects | executions "
        "| duplicates absorbed | skipped by policy | lost | duplicated effects | not terminal "
        "| dispatch lateness p50 / p99 s | result |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, f in payload["scenarios"].items():
        lines.append(
            f"| {name}: {f['description']} | {_faults(f)} | {f['slots_expected']:,} | "
            f"{f['occurrences']:,} | {f['effects']:,} | {f['executions']:,} | "
            f"{f['duplicates_absorbed']:,} | {f['skipped_by_policy']:,} | {f['lost']} | "
            f"{f['duplicated_effects']} | {f['not_terminal']} | {_late(f)} | "
            f"{'pass' if f['ok'] else '**FAIL**'} |"
        )
    soak = payload["scenarios"].get("soak")
    if soak and soak.get("lateness_by_10min"):
        lines += ["", *lateness_table(soak["lateness_by_10min"])]
    if soak and soak.get("rss_mib"):
        lines += ["", *rss_table(soak["rss_mib"])]
    lines.append(END)
    return "\n".join(lines)


def lateness_table(windows: list[dict[str, float]]) -> list[str]:
    """Dispatch lateness of the slots of each 10 minutes of the soak (faults included)."""
    lines = [
        "Dispatch lateness by slot time (s; faults included, as in the table above):",
        "",
        "| slots in | dispatched | p50 | p95 | p99 | max |",
        "|---|---|---|---|---|---|",
    ]
    for w in windows:
        lines.append(
            f"| {w['from_min']:.0f}-{w['from_min'] + 10:.0f} min | {w['count']:,} | "
            f"{w['p50']:.2f} | {w['p95']:.2f} | {w['p99']:.2f} | {w['max']:.2f} |"
        )
    return lines


def rss_table(rss_mib: dict[str, list[float]], every_s: float = 30.0) -> list[str]:
    """RSS of each process every 10 minutes of the soak (from samples taken every 30 s), then
    its max. A killed process restarts small: its column drops back."""
    longest = max(len(values) for values in rss_mib.values())
    step = max(int(600 / every_s), 1)
    marks = list(range(0, longest, step))
    if marks[-1] != longest - 1:
        marks.append(longest - 1)
    header = " | ".join(f"{round(i * every_s / 60)} min" for i in marks)
    lines = [
        "RSS over the soak (MiB, sampled every 30 s):",
        "",
        f"| process | {header} | max |",
        "|---|" + "---|" * (len(marks) + 1),
    ]
    for name, values in sorted(rss_mib.items()):
        cells = " | ".join(str(values[i]) if i < len(values) else "-" for i in marks)
        lines.append(f"| {name} | {cells} | {max(values)} |")
    return lines


def _write_doc(payload: dict[str, Any], profile: Any) -> None:
    text = DOC.read_text()
    begin = f"<!-- torture:{profile.name}:begin -->"
    end = f"<!-- torture:{profile.name}:end -->"
    block = render(payload, profile).replace(BEGIN, begin).replace(END, end)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)
