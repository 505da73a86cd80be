"""Lateness classes: defaults fill what the caller left out, explicit values win, real_time is
refused with a pointer to the right tool."""

from __future__ import annotations

import pytest

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import LatenessClass
from scheduler_app.policies.lateness import CLASS_DEFAULTS, LATENESS_FIELDS, apply_class_defaults


def test_every_class_has_every_default_and_a_model_choice() -> None:
    assert set(CLASS_DEFAULTS) == set(LatenessClass.values)
    for defaults in CLASS_DEFAULTS.values():
        assert tuple(defaults) == LATENESS_FIELDS
        assert defaults["deadline"] >= defaults["max_lateness"] > 0


@pytest.mark.parametrize("name", sorted(CLASS_DEFAULTS))
def test_a_class_fills_in_its_defaults(name: str) -> None:
    assert apply_class_defaults({"lateness_class": name}) == {
        "lateness_class": name,
        **CLASS_DEFAULTS[name],
    }


def test_explicit_values_win_and_any_case_is_stored_lower() -> None:
    values = apply_class_defaults({"lateness_class": "Human_Reminder", "deadline": 30})
    assert values == {
        "lateness_class": "human_reminder",
        "max_lateness": 60,
        "misfire_policy": "fire_once",
        "deadline": 30,
    }


def test_an_update_applies_defaults_only_when_the_class_changes() -> None:
    current = {"lateness_class": "maintenance", "max_lateness": 5}
    same = apply_class_defaults({"lateness_class": "maintenance"}, current=current)
    assert same == {"lateness_class": "maintenance"}
    changed = apply_class_defaults({"lateness_class": "business_batch"}, current=current)
    assert changed["max_lateness"] == 900


def test_no_class_changes_nothing() -> None:
    assert apply_class_defaults({"max_lateness": 5}) == {"max_lateness": 5}
    assert apply_class_defaults({"lateness_class": ""}) == {"lateness_class": ""}


def test_real_time_is_refused_with_the_right_advice() -> None:
    with pytest.raises(ScheduleValidationError) as error:
        apply_class_defaults({"lateness_class": "REAL_TIME"})
    assert (error.value.field, error.value.code) == ("lateness_class", "real_time")
    assert "use a dedicated real-time system" in error.value.message


def test_an_unknown_class_lists_the_known_ones() -> None:
    with pytest.raises(ScheduleValidationError, match="use one of human_reminder, business_batch"):
        apply_class_defaults({"lateness_class": "soonish"})
