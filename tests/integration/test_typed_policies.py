"""A parsed definition's policies, typed: ``definition.policies.misfire`` is a ``CatchUp``
with a ``timedelta`` window, not a column name and a number of seconds. What a definition
shows is what was written (read against the values a person gave, not against the parser's
own output), and a value read from it can be given back to ``@scheduled``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from project.demo.tasks import echo
from scheduler_app.authoring.declarations import isolated_registry, scheduled
from scheduler_app.declarations import (
    CancelPrevious,
    CatchUp,
    Deadline,
    FireOnce,
    Overlap,
    Retry,
    Skip,
    Window,
)
from scheduler_app.definition.typed import Dst, Payload, Policies, Routing, Safety
from scheduler_app.services import parse_definition
from tests.integration.support import START, TASK

pytestmark = pytest.mark.django_db


def policies(**given: Any) -> Policies:
    return parse_definition(
        {"task": TASK, "kind": "cron", "rule": "0 6 * * *", **given}, now=START
    ).policies


def test_a_definition_left_at_the_defaults_shows_the_store_s_defaults() -> None:
    assert policies() == Policies(
        misfire=CatchUp(window=timedelta(hours=24), limit=12, max_lateness=timedelta(seconds=60)),
        overlap=Overlap(policy="skip"),
        retry=Retry(max_attempts=3, delay=timedelta(seconds=10)),
        deadline=None,
        window=None,
        dst=Dst(nonexistent="auto", ambiguous="auto"),
        routing=Routing(),
        payload=Payload(args=(), kwargs={}, ref=""),
        safety=Safety(mode="live", max_per_day=None, pause_after_failures=None, on_pause="keep"),
    )


WRITTEN: list[tuple[dict[str, Any], str, Any]] = [
    (
        {"misfire_policy": "skip", "max_lateness": timedelta(minutes=5)},
        "misfire",
        Skip(max_lateness=timedelta(minutes=5)),
    ),
    ({"misfire_policy": "fire_once"}, "misfire", FireOnce(max_lateness=timedelta(seconds=60))),
    (
        {"catch_up_window": timedelta(hours=2), "catch_up_limit": 4, "max_lateness": 30},
        "misfire",
        CatchUp(window=timedelta(hours=2), limit=4, max_lateness=timedelta(seconds=30)),
    ),
    ({"overlap_policy": "buffer_one"}, "overlap", Overlap(policy="buffer_one")),
    (
        {"overlap_policy": "cancel_previous", "cancel_grace": 120},
        "overlap",
        CancelPrevious(grace=timedelta(minutes=2)),
    ),
    (
        {"max_attempts": 5, "retry_delay": 30},
        "retry",
        Retry(max_attempts=5, delay=timedelta(seconds=30)),
    ),
    ({"deadline": 3600}, "deadline", Deadline(after=timedelta(hours=1))),
    (
        {"active_window": "Mon-Fri 09:00-17:00", "window_policy": "skip"},
        "window",
        Window(hours="Mon-Fri 09:00-17:00", policy="skip"),
    ),
    (
        {"dst_nonexistent": "skip", "dst_ambiguous": "both"},
        "dst",
        Dst(nonexistent="skip", ambiguous="both"),
    ),
    (
        {"options": {"queue": "reports", "priority": 7}},
        "routing",
        Routing(queue="reports", priority=7),
    ),
    (
        {"args": (1, "a"), "kwargs": {"day": "mon"}, "payload_ref": "state://x"},
        "payload",
        Payload(args=(1, "a"), kwargs={"day": "mon"}, ref="state://x"),
    ),
    (
        {"mode": "shadow", "max_per_day": 10, "pause_after_failures": 3, "on_pause": "cancel"},
        "safety",
        Safety(mode="shadow", max_per_day=10, pause_after_failures=3, on_pause="cancel"),
    ),
]


@pytest.mark.parametrize(("given", "policy", "shown"), WRITTEN)
def test_each_policy_shows_what_was_written(given: dict[str, Any], policy: str, shown: Any) -> None:
    assert getattr(policies(**given), policy) == shown


def test_a_lateness_class_s_defaults_show_as_its_policies() -> None:
    # docs/contract.md: human_reminder is fire_once, 60 s late at most, a 5-minute deadline
    read = policies(lateness_class="human_reminder")
    assert read.misfire == FireOnce(max_lateness=timedelta(seconds=60))
    assert read.deadline == Deadline(after=timedelta(minutes=5))


def test_the_payload_shown_is_a_copy() -> None:
    definition = parse_definition(
        {"task": TASK, "kind": "cron", "rule": "0 6 * * *", "kwargs": {"days": [1, 2]}}, now=START
    )
    with pytest.raises(TypeError):
        definition.policies.payload.kwargs["days"] = []  # type: ignore[index]
    definition.policies.payload.kwargs["days"].append(3)
    assert definition.columns["kwargs"] == {"days": [1, 2]}


def declared_fields(**options: Any) -> dict[str, Any]:
    """The definition fields ``@scheduled(cron="0 6 * * *", **options)`` declares."""
    with isolated_registry() as fresh:
        scheduled(cron="0 6 * * *", **options)(echo)
        [declaration] = fresh.declarations()
    return declaration.options.schedule_fields()


def test_a_policy_read_from_a_definition_can_be_given_back_to_scheduled() -> None:
    read = policies(
        misfire_policy="catch_up",
        catch_up_window=timedelta(hours=3),
        catch_up_limit=2,
        overlap_policy="cancel_previous",
        cancel_grace=90,
        max_attempts=4,
        deadline=600,
        active_window="Mon-Fri 08:00-18:00",
    )
    given_back = parse_definition(
        {
            "task": TASK,
            "kind": "cron",
            "rule": "0 6 * * *",
            **declared_fields(
                misfire=read.misfire,
                overlap=read.overlap,
                retry=read.retry,
                deadline=read.deadline,
                window=read.window,
            ),
        },
        now=START,
    ).policies
    assert given_back == read
