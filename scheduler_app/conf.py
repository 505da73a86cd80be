"""The app's settings: one typed object read from ``SCHEDULER_*`` Django settings on use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from django.conf import settings as django_settings
from django.core.signals import setting_changed

from scheduler_app.timing.budget import DEFAULT_CANDIDATES, DEFAULT_SECONDS, DEFAULT_SPAN_DAYS


@dataclass(frozen=True, kw_only=True)
class SchedulerSettings:
    BATCH_SIZE: int = 500
    """Due schedules claimed per transaction, and pending occurrences published per batch."""
    MAX_INTERVAL: float = 5.0
    """Longest sleep between ticks, in seconds (also how fast edits are noticed)."""
    LEASE_TTL: float = 30.0
    """SQLite only: seconds a beat keeps the single-scheduler lease without renewing it."""
    PUBLISH_LEASE: float = 30.0
    """Seconds a beat owns a pending occurrence while publishing it; after that another may."""
    MAX_PAYLOAD_BYTES: int = 16_384
    """Largest JSON payload (kwargs) a schedule may carry."""
    MIN_INTERVAL: int = 10
    """Smallest allowed distance between two slots of any rule, in seconds (wall clock for
    cron and RRULE). Every slot is a durable row and a broker message: sub-10-second work
    belongs in a long-running worker loop, not in a schedule."""
    SEARCH_CANDIDATES: int = DEFAULT_CANDIDATES
    """Candidate times one computation of a slot (next, previous, preview, validation) may
    evaluate before it gives up: a rule that needs more is refused, or parked at run time."""
    SEARCH_SECONDS: float = DEFAULT_SECONDS
    """CPU seconds one computation of a slot may spend (per slot found): the bound on work the
    candidate count does not see (the rule library's own steps between two candidates)."""
    SEARCH_SPAN_DAYS: int = DEFAULT_SPAN_DAYS
    """Days one computation of a slot may look past where it started (or past the slot before)
    over candidate times that windows, holidays or bounds reject; the default is ten years."""
    VALIDATE_TASK_NAMES: bool = True
    """Refuse schedules whose task is not registered in the Celery app."""
    MAX_SLOTS_PER_TICK: int = 10_000
    """Cap on the late slots examined for one schedule in one tick (counters stop there)."""
    MAX_ROWS_PER_BATCH: int = 10_000
    """Occurrences one batch may create; schedules past it stay due for the next batch."""
    PLAN_SECONDS_PER_BATCH: float = 1.0
    """Seconds one batch may spend planning while it holds its schedules' row locks; the
    schedules not planned by then stay due, untouched, for the next batch (the first is always
    planned, and one plan is bounded by the search budget)."""

    PREPARED_STATEMENTS: bool | None = None
    """PostgreSQL (psycopg 3): prepare the worker's claim and outcome and the beat's probe on
    the server, planned once per connection (``plan_cache_mode = force_generic_plan`` on the
    connections that run them; only prepared statements follow it). ``None``: yes, unless the
    database's ``DISABLE_SERVER_SIDE_CURSORS`` is set (a transaction pooler such as PgBouncer
    in front: set ``True`` there only with PgBouncer 1.21+ and ``max_prepared_statements``)."""

    PERMISSION_CHECK: str = "scheduler_app.safety.permissions.owner_may_run"
    """Dotted path to ``check(schedule) -> bool``, asked before every attempt."""
    RECEIVE_LEASE: float = 30.0
    """Seconds a received, not yet claimed occurrence belongs to its worker without renewal."""
    WORKER_LEASE: float = 60.0
    """Seconds a running attempt owns its occurrence; a heartbeat renews it every third."""
    RECONCILE_INTERVAL: float = 60.0
    """Seconds between reconciler passes run by the beat."""
    DISPATCH_TIMEOUT: float = 3600.0
    """Seconds a published occurrence may wait for a worker before it is published again."""
    MAX_PUBLISHES: int = 3
    """Publications of one occurrence before it ends ``failed: never_started``."""
    RETRY_PUBLISH_GRACE: float = 60.0
    """A retry whose message never arrived is republished this long after it was due."""
    SYNC_ON_BEAT_START: bool = True
    """Write the ``@scheduled`` declarations to the database when the beat starts."""

    # Targets and people (docs/admin.md, docs/reliability.md).
    ALLOWED_TASKS: tuple[str, ...] = ()
    """Task names or fnmatch patterns schedules may target, besides tasks marked schedulable
    (``@scheduled`` or ``@app.task(schedulable=True)``). ``celery.*`` is never allowed."""
    TENANT_RESOLVER: str = "scheduler_app.safety.tenancy.tenants_for_user"
    """Dotted path to ``resolver(user) -> set[str] | None`` (``None``: every tenant)."""
    REQUIRE_OWNER: bool = False
    """Refuse schedules without an owner (every run is then checked against a person)."""
    ALLOWED_QUEUES: Sequence[str] | Mapping[str, Sequence[str]] | None = None
    """Queues a schedule's ``options`` may name: a list for every tenant, or a mapping of tenant
    -> list (``"*"``: the default for tenants not listed); None: any queue but the reserved
    ones (``celery.pidbox``, ``celeryev.*``, ``amq.*``). Also applies to ``routing_key``."""
    BACKFILL_MAX: int = 1_000
    """Backfills (and resumes) creating more occurrences need a second confirmation."""
    JOB_TYPES: Mapping[str, str] | None = None
    """schedule.v1 JOB targets: job type -> Celery task name (tasks may declare one too)."""

    # Operations (docs/operations.md).
    HEALTH_STALE: float = 60.0
    """The health check fails when no beat has ticked for this many seconds."""
    MONITOR_INTERVAL: float = 60.0
    """Seconds between expected-run monitor passes run by the beat."""
    MONITOR_MARGIN: float = 60.0
    """Seconds of lateness beyond a schedule's ``max_lateness`` before the monitor says overdue."""
    APPROVAL_TASKS: tuple[str, ...] = ()
    """Task names or fnmatch patterns whose new schedules and versions need approval."""
    APPROVAL_REQUIRES_OTHER_PERSON: bool = False
    """Four eyes: the person who made a version (created or edited it) cannot approve it;
    another user with ``approve_schedule`` must. A system actor's approval is not affected."""
    CLOCK_SKEW_WARN: float = 2.0
    """Seconds of skew between the beat host's clock and the database's before a warning."""
    RETENTION: str = ""
    """Age of terminal occurrences the beat prunes daily, e.g. "90d"; empty: never. On a
    partitioned ledger, partitions wholly older than that are dropped whole."""
    PARTITIONS_AHEAD: int = 3
    """Partitioned ledger (PostgreSQL): periods after the current one whose partitions the beat
    keeps created (checked hourly)."""
    PARTITION_INTERVAL: str = "month"
    """Partitioned ledger: what one new partition covers, ``month``, ``week`` or ``day`` (UTC)."""
    METRICS_PORT: int = 0
    """Port of the beat's own /metrics endpoint; 0: off."""
    METRICS_TOKEN: str = ""
    """Bearer token for the Django metrics view; empty: staff users only."""

    # Observability where teams already look (docs/operations.md).
    PING_TIMEOUT: float = 5.0
    """Seconds one ping (``Schedule.ping_url``, the beat's ping) may take in all: resolving,
    connecting to at most two addresses, sending and reading; sent off the task's thread, so a
    hanging ping server never holds a run up."""
    PING_ALLOWED_HOSTS: tuple[str, ...] = ()
    """Host names pinged even when they resolve to a private, loopback or link-local address,
    or on a port other than 80 and 443."""
    PING_ALLOW_CREDENTIALS: bool = False
    """Accept ``user:password@`` in a ping URL, sent as HTTP Basic auth (refused by default: it
    would be shown and exported with the schedule)."""
    # Events (docs/events.md): occurrences of ``event:<type>`` schedules POSTed as signed
    # CloudEvents by ``manage.py run_event_deliveries``.
    EVENT_ENDPOINTS: Mapping[str, Mapping[str, object]] | None = None
    """Named webhook endpoints: ``{"billing": {"url": "https://...", "secrets": ["whsec_..."],
    "tenants": ["acme"], "types": ["contract.*"], "concurrency": 4}}``. A schedule names one in
    ``options.endpoint``; the secrets never leave the settings."""
    EVENT_ALLOWED_HOSTS: tuple[str, ...] = ()
    """Endpoint host names events may reach although they resolve to a private, loopback or
    link-local address, or on a port other than 80 and 443 (``SCHEDULER_PING_ALLOWED_HOSTS``
    does the same for pings only)."""
    EVENT_SOURCE: str = "/scheduler"
    """The CloudEvents ``source`` prefix: an event's source is ``<prefix>/schedules/<key>``."""
    EVENT_TIMEOUT: float = 10.0
    """Seconds one delivery may take in all: resolving, connecting, sending, reading."""
    EVENT_CONCURRENCY: int = 16
    """Deliveries in flight at once per delivery process."""
    EVENT_TENANT_CONCURRENCY: int = 8
    """Deliveries of one tenant in flight at once per delivery process."""
    BEAT_PING_URL: str = ""
    """Pinged by every beat after a tick that reached the database (an external dead-man's
    switch for the beat and the database); empty: off."""
    BEAT_PING_EVERY: int = 12
    """Ticks between two beat pings (the first tick pings at once)."""
    SENTRY_CRONS: bool = False
    """Send a Sentry Crons check-in per occurrence (sentry-sdk installed and initialised)."""
    WORKER_METRICS: bool = True
    """A prefork worker prepares a multiprocess directory for its children's metrics when
    ``PROMETHEUS_MULTIPROC_DIR`` is not set (see docs/operations.md)."""
    WORKER_METRICS_PORT: int = 0
    """Port of the worker's own /metrics endpoint (the sum over its pool); 0: off."""


_current: SchedulerSettings | None = None


def get_settings() -> SchedulerSettings:
    """The ``SCHEDULER_*`` settings, read once (a worker asks for them with every task) and
    read again after Django reports a change (``setting_changed``: ``override_settings``,
    pytest-django's ``settings`` fixture)."""
    global _current
    if _current is None:
        _current = SchedulerSettings(
            **{
                f.name: getattr(django_settings, f"SCHEDULER_{f.name}")
                for f in fields(SchedulerSettings)
                if hasattr(django_settings, f"SCHEDULER_{f.name}")
            }
        )
    return _current


def _forget(*, setting: str, **_: object) -> None:
    global _current
    if setting.startswith("SCHEDULER_"):
        _current = None


setting_changed.connect(_forget, dispatch_uid="scheduler_app.conf")
