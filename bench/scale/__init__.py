"""Scale benchmark (``make bench``): our scheduler, celery-redbeat and django-celery-beat, one run.

Same PostgreSQL database, same Redis (one db number), same machine, same process tree. For every
size it creates the same schedules in the three schedulers (mixed cron / rrule / interval in
several zones: see ``bench.scale.workload``) and measures, next to the raw limits of the stack
measured in the same run:

- start-up: a fresh process builds the beat scheduler class and runs its first tick; RSS then;
- idle tick: wall time and round trips (SQL queries, Redis commands) of a tick with nothing due;
- burst: the time until all of B slots due at the same instant are published to the broker
  (B = 1,000, 10,000, 100,000 where the size allows), each scheduler driven in-process;
- beat (largest size): the same from each scheduler's own real ``celery beat`` process, from
  the due instant until the last message is in the broker;
- soak: RSS of a fresh process driving ``Ticker`` through one simulated hour (ours only);

and, once per run (their own schedules, independent of the sizes):

- lateness: a real ``celery beat -S scheduler_app.beat:DurableScheduler`` under a steady
  ``--lateness-rate`` slots per minute; ``dispatched_at - scheduled_for`` p50/p95/p99/max;
- sustained: one, then two real ``celery beat`` processes (SKIP LOCKED) working through
  ``--backlog`` schedules due at a whole minute; occurrences per second and duplicates,
  compared with the raw ``apply_async`` rate;
- worker: one real ``celery worker --pool solo`` process executing no-op tasks, as
  ``OccurrenceTask`` occurrences and as a plain Celery task: executed/s, queries per task.

    python -m bench.scale [--sizes 1000,10000] [--only startup,burst,...] [--repeats 3]
                          [--schedulers ours,redbeat,dcb] [--broker redis|amqp]
                          [--dcb-budget 60] [--rb-budget 120] [--budget 120] [--no-write]
                          [--lateness-seconds 60] [--backlog 10000] [--merge]
                          [--max-minutes 20] [--render-only]

The package: ``workload`` (the schedules, identical in the three schedulers), ``env`` (Django,
brokers, child processes and their log files), ``drivers/`` (one module per scheduler),
``raw`` (the stack's limits), ``figures`` / ``beatburst`` / ``realtime`` / ``worker``
(sampling; ``worker_app`` is the measured worker's Celery app), ``judge`` (the targets),
``render`` / ``texts`` (the Markdown report, rendered from the JSON results) and ``__main__``
(the command line).

Every child process (start-up samples, soaks, beats, workers) writes its output to its own
file under ``var/bench/logs/`` (never to a pipe nobody reads: a beat logging every tick blocks
once a pipe's 64 KiB fill). Needs ``DJANGO_SETTINGS_MODULE=bench.settings``, ``DATABASE_URL``
(a dedicated database: the bench truncates its tables) and ``CELERY_BROKER_URL`` (a dedicated
Redis db: it is emptied); ``--broker amqp`` publishes to RabbitMQ instead (queue ``bench``,
publisher confirms) and keeps that Redis db for celery-redbeat's entries.
"""

from __future__ import annotations

import time

T0 = time.perf_counter()  # child processes report start-up from here (interpreter is up)
