"""What the model admins share: the request handed to their forms, a 404 for a row outside
the user's queryset, read-only admins of the rows the scheduler writes, and the read-only
fields that show an instant in the admin's one format."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import Http404, HttpRequest

from scheduler_app.admin.display import instant_text


class RequestForm:
    """A ``ModelAdmin`` mixin: its form is built with ``request=`` (it narrows its choices to
    what the user may choose)."""

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kw: Any
    ) -> Any:
        form = super().get_form(request, obj, change=change, **kw)  # type: ignore[misc]

        class RequestForm(form):  # type: ignore[misc, valid-type]
            def __new__(cls, *args: Any, **kwargs: Any) -> Any:
                kwargs["request"] = request
                return form(*args, **kwargs)

        return RequestForm


class MissingIs404:
    """A ``ModelAdmin`` mixin: a row outside the user's queryset (another tenant's) answers
    404 with ``missing``, not a redirect that would confirm it exists."""

    missing = "no such row"

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Any, object_id: str
    ) -> Any:
        raise Http404(self.missing)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows the scheduler writes: operators look, nobody edits."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def instant_field(field: str, description: str = "") -> Any:
    """A read-only field showing ``field`` in the admin's instant format, in the zone of the
    row (``obj.timezone``); labelled ``description``, else the field's name."""

    @admin.display(description=description or field.replace("_", " "))
    def show(model_admin: Any, obj: Any) -> str:
        return instant_text(getattr(obj, field), obj.timezone)

    show.__name__ = f"{field}_text"
    return show
