"""The load ahead in one picture: slots per hour as bars (the height of the busiest minute of
each hour drawn as a tick over its bar), days on which a zone changes its offset shaded, days a
holiday excludes slots marked. Server-side SVG, escaped like every admin page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from scheduler_app.forecast.counts import Forecast

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 900, 220, 48, 22, 14
PLOT_W, PLOT_H = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
DST_FILL, HOLIDAY_FILL, BAR_FILL, PEAK_STROKE = "#fff3c4", "#e3f2fd", "#5c6bc0", "#c62828"


@dataclass(frozen=True)
class Axes:
    """Where an instant and a count go on the plot (format_html takes them as text)."""

    start: datetime
    span: float
    tallest: int

    def x(self, at: datetime) -> float:
        return LEFT + PLOT_W * max(0.0, min(1.0, (at - self.start).total_seconds() / self.span))

    def y(self, count: int) -> float:
        return TOP + PLOT_H * (1 - count / self.tallest)


def n(value: float) -> str:
    return f"{value:.1f}"


def render(forecast: Forecast) -> SafeString:
    """The SVG of ``forecast`` (its hours, peaks and marked days)."""
    hours = forecast.hours()
    span = (forecast.end - forecast.start).total_seconds()
    axes = Axes(forecast.start, span, max(hours.values(), default=0) or 1)
    return format_html(
        '<svg class="sched-forecast" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
        'role="img" aria-label="slots per hour ahead, {} in all">{}{}{}{}</svg>',
        WIDTH,
        HEIGHT,
        forecast.total,
        _days(forecast, axes),
        _bars(forecast, axes),
        _ticks(axes),
        format_html(
            '<text x="{}" y="{}" class="tick" text-anchor="end">{}</text>'
            '<text x="{}" y="{}" class="tick" text-anchor="end">0</text>',
            LEFT - 4,
            TOP + 8,
            axes.tallest,
            LEFT - 4,
            TOP + PLOT_H,
        ),
    )


def _days(forecast: Forecast, axes: Axes) -> SafeString:
    """A band over each marked day: yellow for an offset change, blue for a holiday."""
    rows = []
    for mark in forecast.marked:
        start = datetime.combine(mark.day, datetime.min.time(), forecast.start.tzinfo)
        width = max(axes.x(start + timedelta(days=1)) - axes.x(start), 1)
        fill = DST_FILL if mark.kind == "dst" else HOLIDAY_FILL
        rows.append(
            (n(axes.x(start)), TOP, n(width), PLOT_H, fill, mark.day.isoformat(), mark.label)
        )
    return format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} {}</title></rect>',
        rows,
    )


def _bars(forecast: Forecast, axes: Axes) -> SafeString:
    """One bar per hour with slots, and a tick at the height of its busiest minute."""
    peaks: dict[datetime, int] = {}
    for minute, count in forecast.minutes.items():
        hour = minute.replace(minute=0)
        peaks[hour] = max(peaks.get(hour, 0), count)
    bar = max(PLOT_W / (axes.span / 3600) - 1, 1)
    rows = []
    for hour, count in sorted(forecast.hours().items()):
        left, top, peak = axes.x(hour), axes.y(count), axes.y(peaks[hour])
        label = hour.strftime("%Y-%m-%d %H:00")
        rows.append(
            (n(left), n(top), n(bar), n(TOP + PLOT_H - top), BAR_FILL, label, count, peaks[hour])
            + (n(left), n(left + bar), n(peak), n(peak), PEAK_STROKE)
        )
    return format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}">'
        "<title>{} UTC: {} slots, busiest minute {}</title></rect>"
        '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{}"/>',
        rows,
    )


def _ticks(axes: Axes) -> SafeString:
    """About six labels along the time axis."""
    hours = int(axes.span // 3600)
    return format_html_join(
        "",
        '<text x="{}" y="{}" class="tick" text-anchor="middle">{}</text>',
        (
            (n(axes.x(at)), HEIGHT - 6, at.strftime("%a %d %H:%M"))
            for at in (
                axes.start + timedelta(hours=step)
                for step in range(0, hours + 1, max(hours // 6, 1))
            )
        ),
    )
