"""The monitoring page: beat liveness, the kill switches that are on, lateness percentiles,
overdue schedules, misfires and skips, the outbox, dead letters and a 24-hour timeline drawn
server-side as SVG.

Every query is bounded by a time window on an indexed column (``scheduled_for``, the partial
indexes for pending and failed rows, the due index) or by a row limit, so the page costs the
same with ten thousand or ten million occurrences; the number of queries is fixed (tests).
Scoped to the user's tenants like the rest of the admin: a switch is listed when it covers one
of the user's schedules, and only superusers see each beat's host, pid and last error (beats
serve every tenant; their errors may name another tenant's schedule).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import (
    Count,
    Exists,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Sum,
)
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from scheduler_app.admin.display import format_seconds, instant_text
from scheduler_app.conf import get_settings
from scheduler_app.models import (
    BeatHeartbeat,
    KillSwitch,
    KillSwitchScope,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.monitoring.health import BeatHealth, beat_health
from scheduler_app.monitoring.lateness import SAMPLE, window_rows
from scheduler_app.safety.tenancy import allowed_tenants, scope

TIMELINE_ROWS = 5_000
TIMELINE_SCHEDULES = 25
OVERDUE_LISTED = 20
BEATS_LISTED = 20
SWITCHES_LISTED = 50
COLOURS = {
    "succeeded": "#2e7d32",
    "failed": "#c62828",
    "expired": "#ad1457",
    "skipped": "#9e9e9e",
    "cancelled": "#616161",
    "running": "#1565c0",
    "dispatched": "#42a5f5",
    "pending": "#90caf9",
    "retrying": "#ef6c00",
    "buffered": "#ffb300",
}
WIDTH, ROW, LABEL = 900, 18, 180


def _occurrences(request: HttpRequest) -> QuerySet[Occurrence]:
    return scope(Occurrence.objects.all(), request.user, "schedule__tenant")


def _schedules(request: HttpRequest) -> QuerySet[Schedule]:
    return scope(Schedule.objects.all(), request.user)


def overdue(request: HttpRequest, now: datetime) -> tuple[int, list[Schedule]]:
    late = _schedules(request).filter(
        status=ScheduleStatus.ACTIVE, next_run_at__lt=now - timedelta(seconds=60)
    )
    listed = list(
        late.order_by("next_run_at").only("pk", "name", "key", "task", "next_run_at", "timezone")[
            :OVERDUE_LISTED
        ]
    )
    count = len(listed) if len(listed) < OVERDUE_LISTED else late.count()
    return count, listed


def misfires(request: HttpRequest, now: datetime) -> dict[str, Any]:
    skipped = (
        _occurrences(request)
        .filter(state=OccurrenceState.SKIPPED, scheduled_for__gte=now - timedelta(days=1))
        .values("reason")
        .annotate(n=Count("pk"))
        .order_by("-n")
    )
    by_policy = (
        _schedules(request)
        .values("misfire_policy")
        .annotate(
            missed=Sum("missed_count"),
            skipped=Sum("skipped_count"),
            caught_up=Sum("caught_up_count"),
        )
        .order_by("misfire_policy")
    )
    return {"skipped_by_reason": list(skipped), "by_policy": list(by_policy)}


FAILED_CAP = 10_000
"""The dead letters counted on the page at most ("10,000+" beyond)."""


def outbox(request: HttpRequest, now: datetime) -> dict[str, Any]:
    pending = (
        _occurrences(request)
        .filter(state=OccurrenceState.PENDING)
        .aggregate(n=Count("pk"), oldest=Min("created_at"))
    )
    # Counted up to a cap on the partial index of failed rows: the count of every dead
    # letter ever kept grows with the ledger (200,000 rows, 41 ms, at 10,000,000 occurrences).
    dead = _occurrences(request).filter(state=OccurrenceState.FAILED).values("pk")
    failed = dead[: FAILED_CAP + 1].count()
    oldest = pending["oldest"]
    age = None if oldest is None else format_seconds((now - oldest).total_seconds())
    shown = f"{FAILED_CAP:,}+" if failed > FAILED_CAP else f"{failed:,}"
    return {"pending": pending["n"], "oldest_age": age, "failed": shown}


def timeline(request: HttpRequest, now: datetime) -> SafeString:
    """The last 24 h of occurrences, one row per schedule (the most active first), coloured
    by state: two queries, drawn as inline SVG."""
    since = now - timedelta(days=1)
    rows = list(
        _occurrences(request)
        .filter(scheduled_for__gte=since, scheduled_for__lte=now)
        .order_by("-scheduled_for")
        .values_list("schedule_id", "scheduled_for", "state")[:TIMELINE_ROWS]
    )
    per: dict[Any, list[tuple[datetime, str]]] = {}
    for schedule_id, slot, state in rows:
        per.setdefault(schedule_id, []).append((slot, state))
    chosen = sorted(per, key=lambda pk: -len(per[pk]))[:TIMELINE_SCHEDULES]
    names = dict(
        (pk, name or key or task)  # an unnamed schedule reads as its task, not its UUID
        for pk, name, key, task in Schedule.objects.filter(pk__in=chosen).values_list(
            "pk", "name", "key", "task"
        )
    )
    return render_svg([(names.get(pk, str(pk)[:8]), pk, per[pk]) for pk in chosen], since, now)


def render_svg(
    lanes: list[tuple[str, Any, list[tuple[datetime, str]]]], since: datetime, now: datetime
) -> SafeString:
    span = (now - since).total_seconds()
    height = ROW * max(len(lanes), 1) + 24
    plot = WIDTH - LABEL - 10

    def x(at: datetime) -> str:
        return f"{LABEL + plot * max(0.0, min(1.0, (at - since).total_seconds() / span)):.1f}"

    ticks = _ticks(x, since, height)
    lane_parts = [
        _lane(index * ROW, name, pk, marks, x) for index, (name, pk, marks) in enumerate(lanes)
    ]
    body = format_html_join("", "{}", ((part,) for part in lane_parts))
    if not lanes:
        body = format_html(
            '<text x="{}" y="14" class="lane">no occurrences in the last 24 h</text>', LABEL
        )
    return format_html(
        '<svg class="sched-timeline" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
        'role="img" aria-label="occurrences of the last 24 hours by schedule">{}{}</svg>',
        WIDTH,
        height,
        ticks,
        body,
    )


def _ticks(x: Callable[[datetime], str], since: datetime, height: int) -> SafeString:
    """The timeline's grid: a line and a label every 3 hours from ``since`` to now."""
    return format_html_join(
        "",
        '<line x1="{0}" y1="0" x2="{0}" y2="{1}" class="grid"/>'
        '<text x="{0}" y="{2}" class="tick" text-anchor="{4}">{3}</text>',
        (
            (
                x(since + timedelta(hours=h)),
                height - 14,
                height - 2,
                f"-{24 - h}h" if h < 24 else "now",
                "end" if h == 24 else "middle",
            )
            for h in range(0, 25, 3)
        ),
    )


def _lane(
    y: int, name: str, pk: Any, marks: list[tuple[datetime, str]], x: Callable[[datetime], str]
) -> SafeString:
    """One schedule's row at height ``y``: its name, linked to it, and a mark per occurrence."""
    url = reverse("admin:scheduler_app_schedule_change", args=[pk])
    dots = format_html_join(
        "",
        '<rect x="{}" y="{}" width="3" height="{}" fill="{}"><title>{} {}</title></rect>',
        (
            (
                x(at),
                y + 3,
                ROW - 6,
                COLOURS.get(state, "#000"),
                at.isoformat(timespec="seconds"),
                state,
            )
            for at, state in marks
        ),
    )
    return format_html(
        '<a href="{}"><text x="0" y="{}" class="lane">{}</text></a>{}',
        url,
        y + ROW - 5,
        name[:28],
        dots,
    )


def legend() -> SafeString:
    return format_html_join(
        " ",
        '<span class="sched-legend"><span style="background:{}"></span>{}</span>',
        ((colour, state) for state, colour in COLOURS.items()),
    )


@dataclass(frozen=True)
class Beat:
    """One beat process as the page shows it."""

    host: str
    pid: int
    version: str
    started: str
    last_tick: str
    state: str
    last_error: str


def beats(request: HttpRequest, now: datetime) -> tuple[BeatHealth, list[Beat]]:
    """Whether a beat is alive (every viewer), and each beat's row (superusers only)."""
    stale = get_settings().HEALTH_STALE
    health = beat_health(now, stale)
    if not request.user.is_superuser:
        return health, []
    rows = BeatHeartbeat.objects.order_by("-last_tick_at")[:BEATS_LISTED]
    return health, [_beat(row, now, stale) for row in rows]


def _beat(row: BeatHeartbeat, now: datetime, stale: float) -> Beat:
    age = (now - row.last_tick_at).total_seconds()
    state = "stopped" if row.stopped_at is not None else "alive" if age <= stale else "stale"
    return Beat(
        host=row.host,
        pid=row.pid,
        version=row.version,
        started=instant_text(row.started_at),
        last_tick=f"{instant_text(row.last_tick_at)} ({format_seconds(age)} ago)",
        state=state,
        last_error=row.last_error,
    )


def active_switches(request: HttpRequest) -> list[KillSwitch]:
    """The switches that are on and cover one of the user's schedules (all, for superusers):
    global ones, their tenants' and their tasks' (one query)."""
    on = KillSwitch.objects.filter(enabled=True).order_by("scope", "target")
    tenants = allowed_tenants(request.user)
    if tenants is not None:
        tasks = _schedules(request).filter(task=OuterRef("target"))
        on = on.filter(
            Q(scope=KillSwitchScope.GLOBAL)
            | Q(scope=KillSwitchScope.TENANT, target__in=sorted(tenants))
            | Q(Exists(tasks), scope=KillSwitchScope.TASK)
        )
    return list(on[:SWITCHES_LISTED])


def monitoring_page(model_admin: Any, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    now = timezone.now()
    count, listed = overdue(request, now)
    health, beat_rows = beats(request, now)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Scheduler monitoring",
        "now": now,
        "now_text": instant_text(now),
        "beat_health": health,
        "beats": beat_rows,
        "switches": [
            (switch, instant_text(switch.changed_at)) for switch in active_switches(request)
        ],
        "overdue_rows": [
            (s.pk, s.name or s.key or s.task, instant_text(s.next_run_at, s.timezone))
            for s in listed
        ],
        "lateness": window_rows(_occurrences(request), now),
        "overdue_count": count,
        "overdue": listed,
        "misfires": misfires(request, now),
        "outbox": outbox(request, now),
        "timeline": timeline(request, now),
        "legend": legend(),
        "sample": SAMPLE,
    }
    return TemplateResponse(request, "admin/scheduler_app/monitoring.html", context)
