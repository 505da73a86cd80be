"""``get_settings()`` reads the ``SCHEDULER_*`` settings once and again after a change."""

from __future__ import annotations

from django.test import override_settings

from scheduler_app.conf import get_settings


def test_the_settings_are_read_once() -> None:
    assert get_settings() is get_settings()


def test_a_changed_setting_is_read_again_and_the_old_value_comes_back() -> None:
    before = get_settings()
    with override_settings(SCHEDULER_BATCH_SIZE=before.BATCH_SIZE + 7):
        assert get_settings().BATCH_SIZE - before.BATCH_SIZE == 7
    assert get_settings() == before


def test_another_apps_setting_keeps_the_cache() -> None:
    first = get_settings()
    with override_settings(SOME_OTHER_SETTING=1):
        assert get_settings() is first
