# The commands people type. Everything installs what it needs into .venv first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST_ARGS ?= -n 2
# make bench: its own database and Redis db (truncated and flushed), never the test ones.
BENCH_PG_URL ?= postgres://postgres@127.0.0.1:5432/bench
BENCH_REDIS_URL ?= redis://127.0.0.1:6379/11
BENCH_ARGS ?=

DIST_DIR ?= dist

.PHONY: install dist test-adoption test-matrix test-matrix-ends test lint typecheck migrations-check test-sqlite test-postgres torture-ci torture soak test-multihost demo bench bench-events bench-handoff bench-timing bench-tracing bench-ledger-size docs clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: install
	$(VENV)/bin/mypy

migrations-check: install
	$(PY) manage.py makemigrations --check --dry-run

test-sqlite: install
	$(VENV)/bin/pytest -m "not postgres and not adoption" $(PYTEST_ARGS)

test-postgres: install
	DATABASE_URL=$(PG_URL) $(VENV)/bin/pytest tests/integration tests/acceptance $(PYTEST_ARGS)

test: lint typecheck migrations-check docs test-sqlite test-postgres test-adoption torture-ci

# The sdist and the wheel (the library only: scheduler_app), in $(DIST_DIR).
dist:
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m build --version >/dev/null 2>&1 || $(PY) -m pip install --quiet 'build>=1.2'
	rm -rf build $(DIST_DIR)/django_durable_scheduler-*
	$(PY) -m build --outdir $(DIST_DIR) .
	rm -rf build

# A new user's five minutes: `make dist`, a fresh venv outside the repository, a project made
# by following docs/install.md on SQLite and on PostgreSQL (then with `[results]`), every admin
# page of the app answering 200, beat and worker on Redis and on RabbitMQ (a few minutes).
RABBITMQ_URL ?= amqp://guest:guest@127.0.0.1:5672//
test-adoption: install
	PG_URL=$(PG_URL) REDIS_URL=$(REDIS_URL) RABBITMQ_URL=$(RABBITMQ_URL) $(VENV)/bin/pytest tests/adoption -m adoption -p no:cacheprovider

# The supported versions (noxfile.py): every (Python, Django) pair of Django 5.2 LTS, 6.0 and
# 6.1 on Python 3.11 (5.2 only), 3.12 and 3.13, on SQLite. Interpreters: pyenv's versions.
NOX_ARGS ?=
test-matrix: install
	$(VENV)/bin/nox $(NOX_ARGS)

# What CI runs after `make test` (which is Django 5.2 on the machine's python3, 3.11): the
# other end, Django 6.1 on Python 3.13, the whole unit/integration/acceptance suite on SQLite
# and on PostgreSQL, both handoff targets (a missing python3.13 fails when CI is set).
test-matrix-ends: install
	PG_URL=$(PG_URL) $(VENV)/bin/nox -s "tests(python3.13-django6.1)" -- --postgres

# The reliability harness (docs/reliability.md): its own PostgreSQL and Redis servers, real
# beats and workers, faults. The short profile is part of `make test`; TORTURE_ARGS adds
# e.g. --seed N or --scenarios kill_beats,mixed.
TORTURE_ARGS ?=
torture-ci: install
	$(PY) -m torture --profile ci $(TORTURE_ARGS)

torture: install
	$(PY) -m torture --profile long --write $(TORTURE_ARGS)

soak: install
	$(PY) -m torture --profile soak --write $(TORTURE_ARGS)

# Beyond one machine (docs/deployment.md, "Several hosts"): hosts made of network namespaces
# (root needed), PgBouncer in transaction mode (apt-get installs it if missing), 3 beats and
# 2 workers, PostgreSQL restarted twice and a beat killed under load, the ledger checked.
# Not part of `make test` (about 3 minutes). MULTIHOST_ARGS adds e.g. --seconds 60 --seed N.
MULTIHOST_ARGS ?=
test-multihost: install
	timeout --kill-after=30 600 $(PY) -m torture.multihost $(MULTIHOST_ARGS)

# SQLite and the filesystem broker: beat, a worker and the admin (its login printed), a live
# table of the occurrences; one Ctrl-C stops them all.
demo: install
	$(PY) -m project.demo.run

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

# Scale, side by side with django-celery-beat (not part of `make test`); defaults: sizes 1,000
# and 10,000, every figure. Larger sizes and split runs (--merge keeps the other parts from the
# last JSON):
# make bench BENCH_ARGS="--sizes 1000,10000,100000 --budget 600 --dcb-budget 120"
# make bench BENCH_ARGS="--sizes 1000000 --only startup,soak,burst --merge"   # ~4 min to create
# make bench BENCH_ARGS="--only lateness,sustained --backlog 50000 --merge"
bench: $(VENV)/.installed-bench
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) -m bench.scale $(BENCH_ARGS)
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) -m bench.tracing
	# The same burst of 1,000 through both handoff targets (Celery, django.tasks/django-tasks-db).
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) -m bench.djtasks_burst
	$(MAKE) bench-events
	$(MAKE) bench-handoff

# What PostgreSQL writes to create and hand off 1,000 occurrences: today's ledger row against
# a narrow outbox (issue 39), on copies of the ledger table (also run by `make bench`).
bench-handoff: $(VENV)/.installed-bench
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) -m bench.handoff_writes $(HANDOFF_ARGS)

# Event deliveries to a local receiver that verifies every signature (also run by `make bench`).
bench-events: $(VENV)/.installed-bench
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) -m bench.events $(EVENTS_ARGS)

# The burst of 1,000 with and without an OpenTelemetry SDK configured (also run by `make bench`).
bench-tracing: $(VENV)/.installed-bench
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) -m bench.tracing $(TRACING_ARGS)

# The idle tick, a burst, the monitor pass and the admin's lists against a large ledger (issue
# 22). Fills the bench database's ledger up to LEDGER_ROWS (the first time it truncates the
# scheduler tables), then measures; run again with a larger LEDGER_ROWS to add rows:
# make bench-ledger-size LEDGER_ROWS=10000000   # ~9 GB, ~15 min to add on 2 CPUs
LEDGER_ROWS ?= 1000000
bench-ledger-size: $(VENV)/.installed-bench
	DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=$(BENCH_PG_URL) \
		CELERY_BROKER_URL=$(BENCH_REDIS_URL) $(PY) bench/ledger_size.py \
		--generate $(LEDGER_ROWS) --measure

bench-timing: install
	$(PY) -m bench.timing
	$(PY) -m bench.timing_limits

docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
