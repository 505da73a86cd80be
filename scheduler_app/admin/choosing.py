"""The schedule form's choices, set per request: the tasks and zones it suggests, the tenants
and owners the editor may pick (``ScheduleChoices``, the base of ``ScheduleForm``)."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from scheduler_app.admin import events
from scheduler_app.admin.fields import DatalistInput, zone_names
from scheduler_app.handoff.allowlist import allowed_tasks
from scheduler_app.safety import permissions
from scheduler_app.safety.permissions import may_assign_owner
from scheduler_app.safety.tenancy import allowed_tenants, may_access


class ScheduleChoices(forms.ModelForm):
    """The choices part of the schedule form; it declares no field of its own. ``ScheduleForm``
    calls ``_choices`` when it is built, and ``_tenant`` when it checks the owner and the
    endpoint."""

    request: Any

    def _choices(self) -> None:
        if "task" in self.fields:
            tasks = allowed_tasks()
            self.fields["task"].widget = DatalistInput(tasks, attrs={"size": 50})
            self.fields["task"].help_text = events.TASK_HELP
        events.configure(self, self.instance, getattr(self.request, "user", None))
        if "timezone" in self.fields:
            self.fields["timezone"].widget = DatalistInput(zone_names(), attrs={"size": 30})
            self.fields["timezone"].help_text = "IANA zone, e.g. Europe/Riga (start typing)."
        user = getattr(self.request, "user", None)
        if "tenant" in self.fields and user is not None:
            tenants = allowed_tenants(user)
            if tenants is not None:
                options = sorted(tenants)
                self.fields["tenant"] = forms.ChoiceField(
                    choices=[(t, t or "(no tenant)") for t in options],
                    initial=options[0] if options else "",
                    required=False,
                )
        if "owner" in self.fields and user is not None:
            self._owner_field(user)

    def _owner_field(self, user: Any) -> None:
        """The owners ``permissions.owner_choices`` allows in the schedule's tenant (and the
        current owner, which may stay); the add form starts with the editor as the owner. A
        user who may not assign owners sees the owner without being able to change it (the
        service refuses another owner anyway)."""
        field = cast(forms.ModelChoiceField, self.fields["owner"])
        allowed = permissions.owner_choices(user, self._tenant())
        keep = Q(pk__in=allowed.values("pk"))
        if self.instance.owner_id is not None:
            keep |= Q(pk=self.instance.owner_id)
        elif not may_assign_owner(user):
            keep |= Q(pk=user.pk)
        field.queryset = get_user_model().objects.filter(keep).order_by("username")
        field.help_text = "Runs are checked against this user's permissions when they start."
        if self.instance._state.adding:
            field.initial = user.pk
            self.initial.setdefault("owner", user.pk)
        if not may_assign_owner(user):
            field.disabled = True
            field.help_text += " Choosing another owner needs the assign_owner permission."

    def _tenant(self) -> str:
        """The tenant the owner is picked for: the posted one when the editor may use it, else
        the schedule's (or the first of the editor's). A posted tenant of someone else is
        refused by the tenant field; the owners offered meanwhile are never its staff."""
        if self.is_bound and "tenant" in self.fields:
            posted = str(self.data.get(self.add_prefix("tenant")) or "")
            user = getattr(self.request, "user", None)
            if user is not None and may_access(user, posted):
                return posted
        if not self.instance._state.adding:
            return str(self.instance.tenant or "")
        return str(self.fields["tenant"].initial or "") if "tenant" in self.fields else ""
