"""The load ahead in one picture: slots per hour as bars (the height of the busiest minute of
each hour drawn as a tick over its bar), days on which a zone changes its offset shaded, days a
holiday excludes slots marked, the busiest minutes named. Server-side SVG, escaped like every
admin page."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from scheduler_app.forecast.counts import Forecast

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 900, 220, 48, 22, 14
DST_FILL, HOLIDAY_FILL, BAR_FILL, PEAK_STROKE = "#fff3c4", "#e3f2fd", "#5c6bc0", "#c62828"


def render(forecast: Forecast) -> SafeString:
    """The SVG of ``forecast`` (its hours, peaks and marked days)."""
    span = (forecast.end - forecast.start).total_seconds()
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    hours = forecast.hours()
    peaks: dict[datetime, int] = {}
    for minute, count in forecast.minutes.items():
        hour = minute.replace(minute=0)
        peaks[hour] = max(peaks.get(hour, 0), count)
    tallest = max(hours.values(), default=0) or 1

    def x(at: datetime) -> float:
        return LEFT + plot_w * max(0.0, min(1.0, (at - forecast.start).total_seconds() / span))

    def y(count: int) -> float:
        return TOP + plot_h * (1 - count / tallest)

    def n(value: float) -> str:  # format_html escapes its arguments to text first
        return f"{value:.1f}"

    bar = max(plot_w / (span / 3600) - 1, 1)
    days = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{} {}</title></rect>',
        (
            (
                n(x(start)),
                TOP,
                n(max(x(start + timedelta(days=1)) - x(start), 1)),
                plot_h,
                DST_FILL if mark.kind == "dst" else HOLIDAY_FILL,
                mark.day.isoformat(),
                mark.label,
            )
            for mark in forecast.marked
            for start in [datetime.combine(mark.day, datetime.min.time(), forecast.start.tzinfo)]
        ),
    )
    bars = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" fill="{}">'
        "<title>{} UTC: {} slots, busiest minute {}</title></rect>"
        '<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="{}"/>',
        (
            (
                n(x(hour)),
                n(y(count)),
                n(bar),
                n(TOP + plot_h - y(count)),
                BAR_FILL,
                hour.strftime("%Y-%m-%d %H:00"),
                count,
                peaks[hour],
                n(x(hour)),
                n(x(hour) + bar),
                n(y(peaks[hour])),
                n(y(peaks[hour])),
                PEAK_STROKE,
            )
            for hour, count in sorted(hours.items())
        ),
    )
    ticks = format_html_join(
        "",
        '<text x="{}" y="{}" class="tick" text-anchor="middle">{}</text>',
        (
            (n(x(at)), HEIGHT - 6, at.strftime("%a %d %H:%M"))
            for at in (
                forecast.start + timedelta(hours=step)
                for step in range(0, int(span // 3600) + 1, max(int(span // 3600) // 6, 1))
            )
        ),
    )
    scale = format_html(
        '<text x="{}" y="{}" class="tick" text-anchor="end">{}</text>'
        '<text x="{}" y="{}" class="tick" text-anchor="end">0</text>',
        LEFT - 4,
        TOP + 8,
        tallest,
        LEFT - 4,
        TOP + plot_h,
    )
    return format_html(
        '<svg class="sched-forecast" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
        'role="img" aria-label="slots per hour ahead, {} in all">{}{}{}{}</svg>',
        WIDTH,
        HEIGHT,
        forecast.total,
        days,
        bars,
        ticks,
        scale,
    )
