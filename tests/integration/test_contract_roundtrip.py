"""Every semantic field survives export and import, in both styles; generated documents too."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_app.clock import FakeClock
from scheduler_app.contract import export_all, import_text
from scheduler_app.contract.export import looks_like_uuid
from scheduler_app.contract.fields import UNPLACED
from scheduler_app.models import SEMANTIC_FIELDS
from scheduler_app.safety.payloads import looks_secret
from scheduler_app.services import DEFAULTS, create_schedule
from tests.integration.contract_support import COMPARED, snapshot, wipe
from tests.integration.support import START

pytestmark = pytest.mark.django_db
STYLES = ("native", "spec")

# A value different from the default for EVERY semantic field: a field added to
# SEMANTIC_FIELDS fails ``test_every_semantic_field_has_a_non_default_value`` until it gets one
# here, and then the round trip below checks that documents carry it.
CALENDAR: dict[str, Any] = {
    "task": "demo.briefing",
    "kwargs": {"region": "EU", "n": [1, 2]},
    "objective": "weekly",
    "kind": "rrule",
    "rule": "FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=9;BYMINUTE=30",
    "anchor": datetime(2026, 1, 1, tzinfo=UTC),
    "timezone": "Europe/Riga",
    "dst_nonexistent": "shift",
    "dst_ambiguous": "last",
    "starts_at": datetime(2026, 1, 1, tzinfo=UTC),
    "ends_at": datetime(2027, 1, 1, tzinfo=UTC),
    "max_count": 40,
    "misfire_policy": "skip",
    "max_lateness": 120,
    "catch_up_window": 3600,
    "catch_up_limit": 3,
    "overlap_policy": "buffer_all",
    "on_pause": "cancel",
    "max_attempts": 5,
    "retry_delay": 30,
    "cancel_grace": 20,
    "active_window": "MON-FRI 08:00-18:00",
    "window_policy": "skip",
    "deadline": 600,
    "jitter": 15,
    "mode": "shadow",
    "expected_every": 86400 * 4,
    "lateness_class": "business_batch",
    "job_type": "reports.weekly",
    "payload_ref": "s3://bucket/reports/weekly.json",
    "options": {"queue": "reports", "priority": 5},
    "pause_after_failures": 3,
    "max_per_day": 4,
    "archive_on_completion": True,
    "args": [7, "eu", {"deep": [None]}],
    "exclude_holidays": "US-NY",
    "ping_url": "https://hc-ping.com/5a1e4d0c-6b1f-4f43-9d53-4d8b2f1e0c11",
}
INTERVAL: dict[str, Any] = {
    "kind": "interval",
    "rule": "900",
    "interval_mode": "fixed_delay",
    "anchor": datetime(2026, 1, 5, tzinfo=UTC),
}


@pytest.fixture
def job_types(settings: Any) -> None:
    settings.SCHEDULER_JOB_TYPES = {"reports.weekly": "demo.briefing"}


def test_every_semantic_field_has_a_non_default_value() -> None:
    covered = {
        name
        for name in SEMANTIC_FIELDS
        if CALENDAR.get(name, DEFAULTS.get(name)) != DEFAULTS.get(name)
        or INTERVAL.get(name, DEFAULTS.get(name)) != DEFAULTS.get(name)
    }
    assert covered >= set(SEMANTIC_FIELDS) - {"task", "kind", "rule"}
    assert UNPLACED == (), f"fields no schedule.v1 document carries: {UNPLACED}"


@pytest.mark.parametrize("style", STYLES)
def test_every_semantic_field_survives_export_and_import(job_types: None, style: str) -> None:
    clock = FakeClock(START)
    owner = get_user_model().objects.create_user("ops")
    create_schedule(
        clock=clock,
        key="calendar",
        name="Weekly",
        tenant="acme",
        owner=owner,
        origin="code",
        **CALENDAR,
    )
    create_schedule(clock=clock, task="demo.ping", **INTERVAL)
    before = snapshot()
    exported = export_all(style=style)  # type: ignore[arg-type]
    wipe()
    import_text(exported, clock=clock)
    after = snapshot()
    for pk, values in before.items():
        for name, old, new in zip(COMPARED, values, after[pk], strict=True):
            assert old == new, f"{style}: {name} of {pk} came back as {new!r}, was {old!r}"
    assert export_all(style=style) == exported  # type: ignore[arg-type]
    # And re-importing onto itself changes nothing: no new version.
    changes = import_text(exported, clock=clock).plan.changes
    assert [c.action for c in changes] == ["unchanged", "unchanged"]


def test_a_document_of_one_style_imports_onto_a_schedule_exported_in_the_other(
    job_types: None,
) -> None:
    clock = FakeClock(START)
    create_schedule(clock=clock, key="calendar", **CALENDAR)
    spec = export_all(style="spec")
    native = export_all()
    assert [c.action for c in import_text(spec, clock=clock).plan.changes] == ["unchanged"]
    assert [c.action for c in import_text(native, clock=clock).plan.changes] == ["unchanged"]


# -- generated documents -----------------------------------------------------------------------

RULES = [
    ("cron", "30 9 * * 1-5"),
    ("cron", "*/15 * * * *"),
    ("cron", "0 2 * * *"),
    ("rrule", "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"),
    ("rrule", "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=23"),
    ("interval", "900"),
    ("interval", "PT1H"),
    ("once", "2027-03-28T02:30:00"),
    ("once", "2027-01-01T00:00:00Z"),
]
ZONES = ["UTC", "Europe/Riga", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)
KEYS = TEXT.filter(lambda key: not looks_secret(key))
"""Payload keys: a secret-looking one is refused by design (the import plan says so)."""
SECONDS = st.integers(min_value=0, max_value=86400)
COUNTS = st.integers(min_value=1, max_value=50)
INSTANTS = st.datetimes(
    min_value=datetime(2025, 1, 1), max_value=datetime(2026, 12, 31), timezones=st.just(UTC)
).map(lambda moment: moment.replace(microsecond=0))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**31), 2**31) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)


def in_spec_style(document: dict[str, Any]) -> dict[str, Any]:
    """The same document as an integrator writing the specification's form would: upper-case
    enumerations, RECURRENCE, misfire and max_lateness_s at the top, user:// owners, the key
    as schedule_id."""
    spec = json.loads(json.dumps(document))
    timing, policies, target = spec["timing"], spec["policies"], spec["target"]
    timing["kind"] = {"rrule": "RECURRENCE"}.get(timing["kind"], timing["kind"].upper())
    for name in ("interval_mode", "window_policy"):
        if name in timing:
            timing[name] = timing[name].upper()
    timing["dst"] = {name: value.upper() for name, value in timing["dst"].items()}
    for name in ("overlap", "on_pause", "mode", "lateness_class"):
        policies[name] = policies[name].upper()
    spec["misfire"] = policies.pop("misfire").upper()
    if "max_lateness" in policies:
        spec["max_lateness_s"] = policies.pop("max_lateness")
    target["type"] = target["type"].upper()
    if spec["owner_ref"] and not spec["owner_ref"].startswith("user://"):
        spec["owner_ref"] = "user://" + spec["owner_ref"]
    spec["status"] = spec["status"].upper()
    key = spec.pop("key")
    if key is not None and not looks_like_uuid(key):
        spec["schedule_id"] = key
    elif key is not None:
        spec["key"] = key
    return spec


@st.composite
def documents(draw: Any) -> dict[str, Any]:
    kind, rule = draw(st.sampled_from(RULES))
    timing: dict[str, Any] = {"kind": kind, "rule": rule, "timezone": draw(st.sampled_from(ZONES))}
    if kind in ("rrule", "interval"):
        timing["anchor"] = draw(INSTANTS).isoformat()
    if kind == "interval":
        timing["interval_mode"] = draw(st.sampled_from(["fixed_rate", "fixed_delay"]))
    timing["dst"] = {
        "nonexistent": draw(st.sampled_from(["auto", "skip", "shift", "next_valid"])),
        "ambiguous": draw(st.sampled_from(["auto", "first", "last", "both"])),
    }
    if kind == "cron" and draw(st.booleans()):
        # Windows every cron rule above fires in (a skip window it never fires in is refused).
        timing["window_policy"] = draw(st.sampled_from(["defer", "skip"]))
        weekdays = ["MON-FRI 00:00-23:59"]
        choices = weekdays if timing["window_policy"] == "skip" else [*weekdays, "SAT 10:00-12:00"]
        timing["active_window"] = draw(st.sampled_from(choices))
    policies: dict[str, Any] = {
        "misfire": draw(st.sampled_from(["skip", "fire_once", "catch_up"])),
        "overlap": draw(
            st.sampled_from(["allow", "skip", "buffer_one", "buffer_all", "cancel_previous"])
        ),
        "on_pause": draw(st.sampled_from(["keep", "cancel"])),
        "mode": draw(st.sampled_from(["live", "shadow"])),
        "lateness_class": draw(
            st.sampled_from(["", "human_reminder", "business_batch", "maintenance"])
        ),
        "max_per_day": draw(st.none() | COUNTS),
        "pause_after_failures": draw(st.none() | COUNTS),
        "archive_on_completion": draw(st.booleans()),
        "ping_url": draw(st.sampled_from(["", "https://hc-ping.com/abc", "http://10.0.0.5/p"])),
    }
    for name in ("max_lateness", "catch_up_window", "jitter", "retry_delay", "cancel_grace"):
        if draw(st.booleans()):
            policies[name] = draw(SECONDS)
    for name in ("deadline", "expected_every"):
        policies[name] = draw(st.none() | st.integers(min_value=60, max_value=86400))
    for name in ("catch_up_limit", "max_attempts"):
        policies[name] = draw(COUNTS)
    job = draw(st.booleans())
    target: dict[str, Any] = (
        {"type": "job", "job_type": "reports.weekly"}
        if job
        else {"type": "task", "task": "demo.ping"}
    )
    target["payload_ref"] = draw(st.sampled_from(["", "state://sync-source-42", "s3://b/k"]))
    target["kwargs"] = draw(st.dictionaries(KEYS, JSON_VALUES, max_size=3))
    target["options"] = draw(
        st.fixed_dictionaries(
            {}, optional={"queue": st.sampled_from(["io", "cpu"]), "priority": st.integers(0, 9)}
        )
    )
    return {
        "key": draw(st.none() | TEXT.filter(lambda text: text.strip() != "")),
        "name": draw(TEXT),
        "tenant_id": draw(st.sampled_from(["", "acme", "tenant_A"])),
        "owner_ref": draw(st.sampled_from([None, "alice", "user://alice"])),
        "objective": draw(TEXT),
        "target": target,
        "timing": timing,
        "policies": policies,
        "status": draw(st.sampled_from(["active", "paused", "ACTIVE", "Paused"])),
    }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(document=documents(), written_in=st.sampled_from(STYLES), style=st.sampled_from(STYLES))
def test_generated_documents_round_trip_in_both_styles(
    job_types: None, document: dict[str, Any], written_in: str, style: str
) -> None:
    """A generated document, written in either style, imports; its export in either style
    re-imports unchanged, and into an empty database gives the same schedule and bytes."""
    wipe()
    get_user_model().objects.get_or_create(username="alice")
    clock = FakeClock(START)
    import_text(json.dumps([document]), clock=clock)
    before = snapshot()
    if written_in == "spec":  # the same document in the other style is the same schedule
        wipe()
        import_text(json.dumps([in_spec_style(document)]), clock=clock)
        assert _same_but_id(before)
        before = snapshot()
    exported = export_all(style=style)  # type: ignore[arg-type]
    assert [c.action for c in import_text(exported, clock=clock).plan.changes] == ["unchanged"]
    wipe()
    import_text(exported, clock=clock)
    assert snapshot() == before
    assert export_all(style=style) == exported  # type: ignore[arg-type]


def _same_but_id(before: dict[str, tuple[Any, ...]]) -> bool:
    """Both imports made one schedule with equal fields; only the generated UUIDs differ."""
    [old] = before.values()
    [new] = snapshot().values()
    position = COMPARED.index("id")
    return old[:position] + old[position + 1 :] == new[:position] + new[position + 1 :]


def _same_but_id(before: dict[str, tuple[Any, ...]]) -> bool:
    """Both imports made one schedule with equal fields; only the generated UUIDs differ."""
    [old] = before.values()
    [new] = snapshot().values()
    position = COMPARED.index("id")
    return old[:position] + old[position + 1 :] == new[:position] + new[position + 1 :]


def test_a_solar_schedule_with_holidays_and_args_survives_export_and_import() -> None:
    clock = FakeClock(START)
    create_schedule(
        clock=clock,
        task="demo.echo",
        key="solar",
        kind="solar",
        rule="dusk 56.9496 24.1052",
        timezone="Europe/Riga",
        exclude_holidays="LV",
        args=[1, "two"],
    )
    for style in STYLES:
        before = snapshot()
        exported = export_all(style=style)  # type: ignore[arg-type]
        [document] = json.loads(exported)["schedules"]
        assert document["timing"]["exclude_holidays"] == "LV"
        assert document["target"]["args"] == [1, "two"]
        assert document["timing"]["kind"] == ("SOLAR" if style == "spec" else "solar")
        wipe()
        import_text(exported, clock=clock)
        assert snapshot() == before
