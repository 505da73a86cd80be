"""The report's prose: how each figure is measured and what limits it. Numbers never appear
here except through the run's settings and results (``{...}`` fields filled by ``render``)."""

from __future__ import annotations

from typing import Any

from bench.scale.drivers import WARMUP_TICKS

DCB_SOAK_NOTE = (
    "django-celery-beat and celery-redbeat read the real time in several places"
    " (`datetime.now()`, Django's `timezone.now()`, Celery's `app.now()`, `time.monotonic()`),"
    " so a simulated hour needs a clock-patching library (time-machine, freezegun), which is"
    " not a dependency of this project"
)

LIMITS = {
    "raw": (
        "What limits it: these are the stack's own costs in this run, with no scheduler: one"
        " Celery message built and sent per `apply_async` call (Python in Celery and kombu,"
        " one Redis round trip each); a Redis pipeline sends many messages per round trip, so"
        " its rate is what the broker itself takes."
    ),
    "startup": (
        "What limits it: ours reads nothing per schedule at start-up (the first tick asks"
        " PostgreSQL for the earliest `next_run_at` and whether the outbox has work);"
        " celery-redbeat reads only the due part of its sorted set; django-celery-beat loads"
        " every enabled row into its heap, so its start-up grows with N. Imports and"
        " `django.setup()` are not counted (the same for all three)."
    ),
    "process_start": (
        "Issue 16's definition of start-up (process start to first tick done), measured from"
        " the parent's spawn of a fresh `python -m bench.scale` process. What limits it: the"
        " interpreter and the imports of Django, Celery and kombu, the same for all three"
        " (the bench's process imports a little more than `celery beat` does), then the"
        " figure above."
    ),
    "rss": (
        "What limits it: the imported code (Django, Celery, kombu, the scheduler) for all"
        " three; django-celery-beat also holds every entry in memory."
    ),
    "idle": (
        "What limits it: round trips (next table) and the Python around them: ours asks"
        " PostgreSQL in one statement for the earliest `next_run_at` and for outbox work, sent"
        " with its values apart and prepared (`prepare_threshold` = 5 in the bench settings:"
        " planning it, across every partition of the ledger, costs more than running it);"
        " before it, `DurableScheduler.tick()` does Django's `close_old_connections()` minus the"
        " health check's `SELECT 1` (`CONN_HEALTH_CHECKS`, on in the example project) when the"
        " previous tick used the connection less than a second ago; celery-redbeat"
        " extends its lock and reads its sorted set; django-celery-beat checks for schedule"
        " changes and walks its heap."
    ),
    "round_trips": (
        "Counted in the sampled process: every SQL statement Django executes, and every Redis"
        " command or pipeline sent through redis-py (kombu's and redbeat's)."
    ),
    "burst": (
        "What limits it: {broker}Ours materializes the slots in PostgreSQL (claim, insert,"
        " advance per batch of `SCHEDULER_BATCH_SIZE`) and {ours_publish}: Python per"
        " occurrence dominates (see the profile below). celery-redbeat"
        " loads each due entry (a pipeline per entry), reschedules it (another) and sends it"
        " with `apply_async`: bounded by the `apply_async` rate plus two round trips per"
        " entry. django-celery-beat sends with `apply_async` and saves each entry's row; its"
        " heap is refilled from the database as entries change, which grows with N."
    ),
    "beat": (
        "Each scheduler's own `celery beat` process, started before T with the size's"
        " schedules made for T (a whole minute: cron rules fire on minutes); the parent polls"
        " the queue's length from T on. What limits it: the beat's wake-up at T, plus the same"
        " work as the burst above. Ours and django-celery-beat sleep until their next due"
        " entry; celery-redbeat peeks at its sorted set for it."
    ),
    "soak": (
        "What limits it: ours keeps nothing per schedule between ticks, so RSS should stay"
        " flat; a growth here is a leak."
    ),
    "lateness": (
        "What limits it: one beat's sustained rate (below): once slots come due faster than"
        " a tick materializes and publishes them, each tick starts later and lateness grows"
        " through the window."
    ),
    "sustained": (
        "What limits it: Python per occurrence in the beat (the same work as a burst); a"
        " second beat adds throughput only when CPU cores are free for it (PostgreSQL, Redis"
        " and both beats share this machine's cores)."
    ),
    "worker": (
        "What limits it: for both, the worker's own loop (fetch, acknowledge) and two"
        " statements: the plain task's result row (Celery's `SELECT` and `INSERT`), and"
        " `OccurrenceTask`'s claim (with its attempt record) and outcome, which stores the"
        " same result row in the same statement (docs/tasks.md); each is a round trip to"
        " PostgreSQL. `OccurrenceTask` adds the claim's and the outcome's work in the"
        " database and its own Python (reading the claimed row, the context, the signals)."
    ),
}


OURS_PUBLISH = {
    "redis": "publishes each batch through Redis pipelines",
    "amqp": (
        "publishes each batch on one channel in publisher-confirms mode and waits once for"
        " RabbitMQ's confirms of the whole batch"
    ),
}


def broker_phrase(settings: dict[str, Any]) -> str:
    if settings.get("broker") == "amqp":
        return "RabbitMQ (queue `bench`, publisher confirms)"
    return "that Redis"


def method_text(settings: dict[str, Any], zones: list[str]) -> str:
    sizes = ", ".join(f"{n:,}" for n in settings["sizes"]) or "none"
    rb_budget = f"{settings['rb_budget']:g} s" if "rb_budget" in settings else "-"
    return (
        f"**Workload.** Sizes {sizes}: the same schedules in the three schedulers (same names,"
        " task, kwargs): 50% cron (`M H * * *`), 25% rrule (`FREQ=DAILY;BYHOUR=H;BYMINUTE=M`)"
        f" and 25% interval (1 h), spread over {len(zones)} zones ({', '.join(zones)}), all"
        " with a slot at the same instant T (this minute). django-celery-beat has no rrule:"
        " those are crontab rows in their zone. celery-redbeat has no per-entry zone: its"
        " crontabs are the UTC crontab firing at T, its rrules carry the zone's UTC offset"
        " (no DST), its intervals are Celery's `schedule(1 h)`. Ours and django-celery-beat's"
        " rows are copied in SQL from templates made through each public API; redbeat's"
        " entries are written to Redis in pipelines. PostgreSQL database"
        f" `{settings['database']}` and Redis db {settings['redis_db']}, both only for this"
        f" benchmark; every scheduler publishes real Celery messages to {broker_phrase(settings)}"
        ".\n\n"
        "**Start-up, RSS, idle tick:** a fresh process per sample"
        f" ({settings['repeats']} per size and scheduler, {settings['idle_ticks']} idle ticks"
        f" each after {WARMUP_TICKS} unmeasured ones, nothing due); start-up is building the"
        " beat scheduler class (`DurableScheduler` / `RedBeatScheduler` with its lock taken as"
        " `celery beat` takes it / `DatabaseScheduler`) plus its first tick, after Django is"
        " set up; a process that needs more than its budget"
        f" (django-celery-beat {settings['dcb_budget']:g} s, celery-redbeat {rb_budget}) is"
        " stopped and"
        " reported as not finished.\n\n"
        "**Bursts** (1,000 / 10,000 / 100,000 where the size allows): the first B schedules"
        " due at T, the rest later. Ours: `Ticker.tick()` with `CeleryPublisher` and a"
        " FakeClock at T (batches of `SCHEDULER_BATCH_SIZE` ="
        f" {settings['batch_size']}). celery-redbeat and django-celery-beat read the real"
        " clock: their scheduler is built first (not timed: a running beat did it at"
        " start-up), then `tick()` is driven as `celery beat` drives it (sleeping what it"
        " returns) until every due entry is sent. Runs: ours"
        f" {settings['repeats']}, celery-redbeat {settings.get('rb_repeats', '-')},"
        f" django-celery-beat {settings['dcb_repeats']} per row; budgets"
        f" {settings['budget']:g} s / {rb_budget} / {settings['dcb_budget']:g} s (a burst that"
        " does not finish is not repeated).\n\n"
        "**Raw limits:** interleaved,"
        f" {settings['raw_repeats']} runs each, at most 20 s per run. Cells: median"
        " (min-max) over runs."
    )
