"""celery-redbeat 2.4.2: its ``RedBeatScheduler``, with its entries in the bench's Redis db.

The same N schedules as ours (``bench.scale.workload``: same names, task, kwargs, kinds and
zones), written as redbeat entries: a hash ``redbeat:<name>`` (``definition``, ``meta``) and a
member of the ``redbeat::schedule`` sorted set scored by the next due time. What redbeat cannot
express is mapped to the nearest thing it has, and said so in the report:

- cron in a zone: redbeat's crontab has no zone of its own (it runs in the app's timezone,
  UTC here), so it becomes the UTC crontab that fires at the same instant T;
- rrule in a zone: redbeat's rrule with ``dtstart`` a day before T in the zone (redbeat stores
  a fixed UTC offset, not the zone: no DST);
- interval: Celery's ``schedule(run_every=1 h)``.

The beat lock is taken as ``celery beat`` takes it (redbeat's ``beat_init`` handler) and
extended on every tick, as in a real redbeat beat.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

from bench.scale.env import (
    DAY,
    HOUR,
    PREFIX,
    REDBEAT_PREFIX,
    TASK,
    BudgetExceeded,
    budget,
    celery_app,
    queued,
)
from bench.scale.workload import kind_zone, set_due

LABEL = "celery-redbeat 2.4.2"
SCHEDULE_KEY = REDBEAT_PREFIX + ":schedule"
LOCK_KEY = REDBEAT_PREFIX + ":lock"
CHUNK = 5_000
_state = {"entries": 0, "dirty": 0}
"""How many entries are stored, and how many leading ones may differ from the idle state."""


def configure(app: Any) -> None:
    """Point redbeat at the bench's Redis db (explicitly: no deprecation fallback; on
    RabbitMQ its entries stay in Redis)."""
    from bench.scale.env import redis_url

    app.conf.redbeat_redis_url = redis_url()
    app.conf.redbeat_redis_options = {}  # not the broker's transport options (RabbitMQ's)
    app.conf.redbeat_key_prefix = REDBEAT_PREFIX
    for cached in ("redbeat_conf", "redbeat_redis"):
        if hasattr(app, cached):
            delattr(app, cached)
    from redbeat.schedulers import ensure_conf

    ensure_conf(app)


def rrule_arguments(zone: str, at: datetime) -> dict[str, Any]:
    """Redbeat ``rrule`` arguments of a daily rule in ``zone`` with a slot at ``at``: the
    local hour and minute, from a ``dtstart`` a day before in the zone (redbeat keeps only
    its UTC offset)."""
    local = at.astimezone(ZoneInfo(zone))
    dtstart = (at - DAY).astimezone(ZoneInfo(zone))
    return {"dtstart": dtstart, "byhour": local.hour, "byminute": local.minute}


def redbeat_schedule(kind: str, zone: str, at: datetime) -> Any:
    """Redbeat's nearest equivalent of our ``kind`` schedule in ``zone`` with a slot at ``at``
    (a zone-aware instant)."""
    from celery.schedules import crontab, schedule

    if kind == "cron":
        utc = at.astimezone(ZoneInfo("UTC"))
        return crontab(minute=str(utc.minute), hour=str(utc.hour))
    if kind == "rrule":
        from redbeat.schedules import rrule

        return rrule("DAILY", **rrule_arguments(zone, at))
    if kind == "interval":
        return schedule(run_every=HOUR)
    raise ValueError(f"unknown kind {kind!r}: expected cron, rrule or interval")


def period(kind: str) -> timedelta:
    """The time between two slots of ``kind`` in the workload (cron and rrule: daily)."""
    return HOUR if kind == "interval" else DAY


def entry_state(index: int, burst: int, at: datetime) -> tuple[datetime, datetime]:
    """``(last_run_at, due_at)`` of entry ``index`` when the first ``burst`` are due at ``at``:
    a due entry last ran one period before ``at``; the others ran at ``at``."""
    every = period(kind_zone(index)[0])
    if index < burst:
        return at - every, at
    return at, at + every


def definitions(at: datetime) -> dict[tuple[str, str], str]:
    """One encoded ``schedule`` per kind and zone (the entries share them)."""
    from redbeat.decoder import RedBeatJSONEncoder

    return {
        key: json.dumps(redbeat_schedule(*key, at), cls=RedBeatJSONEncoder)
        for key in {kind_zone(index) for index in range(24)}
    }


def encode_meta(last_run_at: datetime) -> str:
    from redbeat.decoder import RedBeatJSONEncoder

    return json.dumps({"last_run_at": last_run_at}, cls=RedBeatJSONEncoder)


def load(size: int, at: datetime) -> dict[str, Any]:
    """Write ``size`` redbeat entries (none due), replacing any stored ones."""
    from bench.scale.env import redis_client

    begin = time.perf_counter()
    client = redis_client()
    drop(client)
    schedules = definitions(at)
    for start in range(0, size, CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for index in range(start, min(start + CHUNK, size)):
                name = f"{PREFIX}{index:08d}"
                definition = (
                    f'{{"name": "{name}", "task": "{TASK}", "args": [], "kwargs": {{"n": {index}}},'
                    f' "options": {{}}, "schedule": {schedules[kind_zone(index)]},'
                    ' "enabled": true}'
                )
                last_run_at, due_at = entry_state(index, 0, at)
                key = REDBEAT_PREFIX + name
                pipe.hset(key, mapping={"definition": definition, "meta": encode_meta(last_run_at)})
                pipe.zadd(SCHEDULE_KEY, {key: due_at.timestamp()})
            pipe.execute()
    _state.update(entries=size, dirty=0)
    return {"seconds": round(time.perf_counter() - begin, 2)}


def drop(client: Any) -> None:
    """Delete every redbeat key of the bench db (entries, schedule, statics, lock)."""
    keys = list(client.scan_iter(match=REDBEAT_PREFIX + "*", count=10_000))
    for start in range(0, len(keys), 10_000):
        client.delete(*keys[start : start + 10_000])
    _state.update(entries=0, dirty=0)


def arrange(burst: int, at: datetime) -> None:
    """The first ``burst`` entries due at ``at``, the rest idle: rewrites only the leading
    entries that may differ (those of earlier bursts and this one)."""
    from bench.scale.env import redis_client

    upto = min(max(burst, _state["dirty"]), _state["entries"])
    client = redis_client()
    prepare()
    for start in range(0, upto, CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for index in range(start, min(start + CHUNK, upto)):
                key = f"{REDBEAT_PREFIX}{PREFIX}{index:08d}"
                last_run_at, due_at = entry_state(index, burst, at)
                pipe.hset(key, "meta", encode_meta(last_run_at))
                pipe.zadd(SCHEDULE_KEY, {key: due_at.timestamp()})
            pipe.execute()
    _state["dirty"] = burst


def prepare() -> None:
    """Before a start-up sample: drop a lock left by a sample stopped at its budget (it would
    hold the next one for the lock's timeout)."""
    from bench.scale.env import redis_client

    redis_client().delete(LOCK_KEY)


def take_lock(scheduler: Any) -> None:
    """What ``celery beat`` does at start-up with redbeat: its ``beat_init`` handler."""
    from redbeat.schedulers import acquire_distributed_beat_lock

    acquire_distributed_beat_lock(sender=SimpleNamespace(scheduler=scheduler))


def build(app: Any, scheduler_class: Any = None) -> Any:
    from redbeat.schedulers import RedBeatScheduler

    configure(app)
    scheduler = (scheduler_class or RedBeatScheduler)(app=app)
    take_lock(scheduler)
    return scheduler


def close(scheduler: Any) -> None:
    scheduler.close()  # releases the lock


def burst(size: int, at: datetime, seconds: float) -> dict[str, Any]:
    """Build the scheduler (not timed: start-up), then ``tick()``, sleeping what it returns,
    until every due entry is sent."""
    from redbeat.schedulers import RedBeatScheduler

    sent: set[str] = set()

    class Counting(RedBeatScheduler):
        def apply_async(
            self, entry: Any, producer: Any = None, advance: bool = True, **kwargs: Any
        ) -> Any:
            result = super().apply_async(entry, producer=producer, advance=advance, **kwargs)
            if entry.name.startswith(PREFIX):
                sent.add(entry.name)
            return result

    set_due(0, at)  # ours and django-celery-beat idle; the broker emptied
    arrange(size, at)
    build_begin = time.perf_counter()
    scheduler = build(celery_app(), Counting)
    _ = scheduler.producer  # connect before the clock starts
    begin = time.perf_counter()
    deadline = begin + seconds
    ticks = 0
    finished = True
    try:
        with budget(seconds):
            while len(sent) < size and time.perf_counter() < deadline:
                interval = scheduler.tick()
                ticks += 1
                if len(sent) < size and interval and interval > 0:
                    time.sleep(min(interval, max(deadline - time.perf_counter(), 0)))
    except BudgetExceeded:
        finished = False
    elapsed = time.perf_counter() - begin
    close(scheduler)
    return {
        "finished": finished and len(sent) >= size,
        "seconds": elapsed,
        "sent": len(sent),
        "queued": queued(),
        "ticks": ticks,
        "startup_s": begin - build_begin,
    }
