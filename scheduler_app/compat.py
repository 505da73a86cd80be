"""Django 4.2 LTS support: the one newer API the models and migrations use.

``CheckConstraint(condition=...)`` is Django 5.1's name for what 4.2 calls ``check=``. On
Django before 5.1, :func:`install` (run when the app config is imported, before any model or
migration) makes ``CheckConstraint`` accept ``condition=`` as that same argument, as 5.1 does
the other way round. On 5.1+ it does nothing.
"""

from __future__ import annotations

from typing import Any

import django
from django.db.models import CheckConstraint

_installed = False


def install() -> None:
    global _installed
    if _installed or django.VERSION >= (5, 1):
        return
    original = CheckConstraint.__init__

    def __init__(self: CheckConstraint, *args: Any, condition: Any = None, **kwargs: Any) -> None:
        if condition is not None:
            kwargs.setdefault("check", condition)
        original(self, *args, **kwargs)

    CheckConstraint.__init__ = __init__  # type: ignore[method-assign]
    _installed = True
