"""The cells of the report's tables (``bench.scale.render``): a figure's summary as
``median (min-max)``, or why it has none (not run, did not finish)."""

from __future__ import annotations

from typing import Any


def stat(summary: dict[str, Any] | None, key: str, scale: float = 1.0, fmt: str = "{:.3f}") -> str:
    """``median (min-max)`` of ``summary[key]``, or ``-``."""
    if not summary or not summary.get("finished", True) or key not in summary:
        return "-"
    values = summary[key]
    med, low, high = (values[k] * scale for k in ("median", "min", "max"))
    if values.get("n", 2) == 1 or low == high:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(low)}-{fmt.format(high)})"


def dnf(summary: dict[str, Any] | None) -> str | None:
    """The cell text of a figure that was not measured or did not finish, else None."""
    if summary is None:
        return "not run"
    if summary.get("finished", True):
        return None
    if "note" in summary:
        return "not measured (see below)"
    if "error" in summary:
        return "failed (see JSON)"
    return f"did not finish in {summary['budget_s']:g} s"


def cell(summary: dict[str, Any] | None, key: str, fmt: str = "{:.3f}") -> str:
    return dnf(summary) or stat(summary, key, fmt=fmt)


def round_trips(summary: dict[str, Any] | None) -> str:
    """``SQL queries / Redis round trips`` per idle tick (a range when they varied)."""
    if summary is None or not summary.get("finished", True):
        return dnf(summary) or "-"

    def span(key: str) -> str:
        counts = summary.get(key)
        if counts is None:
            return "-"  # not counted (results of the first harness)
        low, high = counts["min"], counts["max"]
        return str(low) if low == high else f"{low}-{high}"

    return f"{span('idle_tick_queries')} / {span('idle_tick_redis')}"


def burst_cell(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return "not run"
    if summary["finished"]:
        return f"{stat(summary, 'seconds')} ({summary['per_second']:,.0f}/s)"
    if summary["runs"][-1].get("build_unfinished"):
        return f"did not finish in {summary['budget_s']:g} s (still loading its schedule)"
    return (
        f"did not finish within {summary['budget_s']:g} s"
        f" ({summary['sent_within_budget']:,} of {summary['burst']:,} sent,"
        f" {summary['per_second']:,.0f}/s)"
    )


def beat_cell(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return "not run"
    first = f" (first {stat(summary, 'first_s')})" if "first_s" in summary else ""
    return burst_cell(summary) + first


def soak_cell(soak: dict[str, Any] | None) -> str:
    if soak is None:
        return "not run"
    if not soak.get("finished", True):
        return "not measured" if "note" in soak else (dnf(soak) or "-")
    figures = " / ".join(
        stat(soak, key, fmt="{:.0f}") for key in ("rss_start_mib", "rss_end_mib", "rss_max_mib")
    )
    return f"{figures} ({soak['due']:,} slots in the hour)"
