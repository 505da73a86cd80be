"""The schedule form: a builder for the rule, task and zone as choices, field-level errors
with the service layer's messages, owner choices limited to what the editor may assign (the
choices are set in ``choosing``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import forms
from django.utils import timezone

from scheduler_app.admin import events
from scheduler_app.admin.builder import (
    MONTHLY_ON,
    NTHS,
    REPEATS,
    WEEKDAYS,
    BuilderError,
    BuilderSpec,
    format_times,
    from_rule,
    parse_times,
    to_rule,
)
from scheduler_app.admin.choosing import ScheduleChoices
from scheduler_app.admin.fields import PayloadJSONField, error_message, error_target
from scheduler_app.admin.words import WORDS_HELP, timing_values
from scheduler_app.definition.parsed import Definition, parse_definition
from scheduler_app.definition.schedule import check_min_interval, timing_for
from scheduler_app.errors import OperatorPermissionDenied, ScheduleValidationError
from scheduler_app.handoff.allowlist import check_target
from scheduler_app.models import SEMANTIC_FIELDS, Schedule
from scheduler_app.policies.lateness import LATENESS_FIELDS
from scheduler_app.safety import permissions
from scheduler_app.safety.approval import WHAT_RUNS, check_runner_edit
from scheduler_app.safety.payloads import check_payload
from scheduler_app.safety.permissions import RUN_PERMISSION
from scheduler_app.timing import Kind, Timing, first_slot_from
from scheduler_app.timing.phrases import MAX_TEXT_LENGTH, ParsedText, parse_text

EDITABLE = ("name", "tenant", "owner", *SEMANTIC_FIELDS)
BUILDER_FIELDS = (
    "words",
    "repeat",
    "every",
    "at_times",
    "weekdays",
    "monthly_on",
    "month_day",
    "nth",
    "nth_weekday",
    "once_at",
)
POSITIONAL_HINT = (
    'kwargs is a JSON object of keyword arguments, e.g. {"n": 1}; put positional arguments '
    'in args, e.g. [1, "eu"]'
)
TIMING_FIELDS = (
    "kind",
    "rule",
    "timezone",
    "anchor",
    "dst_nonexistent",
    "dst_ambiguous",
    "starts_at",
    "ends_at",
    "max_count",
    "active_window",
    "window_policy",
    "exclude_holidays",
)


def timing_only(values: dict[str, Any]) -> Timing:
    """The timing the beat would evaluate: ``timing_for`` on the unsaved definition."""
    fields = {name: values[name] for name in TIMING_FIELDS if values.get(name) not in (None, "")}
    timing = timing_for(Schedule(**fields))
    check_min_interval(timing)
    return timing


def given_on_page(values: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """The definition the page posted, as the person gave it. On a change page the lateness
    policies left as the page showed them are not given: a new lateness class resets them,
    as it resets those an edit through ``update_schedule`` leaves out, and a policy typed or
    cleared wins. Every other field is given, the zone shown too (an RRULE's ``DTSTART``
    zone does not replace it)."""
    if stored is None:
        return values
    return {k: v for k, v in values.items() if k not in LATENESS_FIELDS or v != stored[k]}


class ScheduleForm(ScheduleChoices):
    """Validates the whole definition with the same rules as the API, field by field."""

    expected_version = forms.IntegerField(widget=forms.HiddenInput, required=False)
    endpoint = events.endpoint_field()
    reason = forms.CharField(
        required=False,
        max_length=2000,
        label="Reason for this change",
        help_text="Why (optional): kept with this edit in the schedule's audit trail, with "
        "your user name and the new version number.",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
    )
    words = forms.CharField(
        required=False,
        max_length=MAX_TEXT_LENGTH,
        label="Describe it in words",
        help_text=WORDS_HELP,
        widget=forms.TextInput(attrs={"size": 60}),
    )
    repeat = forms.ChoiceField(
        choices=REPEATS,
        initial="daily",
        required=False,
        label="Repeat",
        help_text="Posted without it (scripts), the raw kind and rule are used.",
    )
    every = forms.IntegerField(min_value=1, required=False, label="Every N", initial=15)
    at_times = forms.CharField(
        required=False,
        initial="09:00",
        label="At (local times)",
        help_text="HH:MM, several separated by commas: 09:00, 17:00",
    )
    weekdays = forms.MultipleChoiceField(
        choices=WEEKDAYS, required=False, widget=forms.CheckboxSelectMultiple, label="On"
    )
    monthly_on = forms.ChoiceField(choices=MONTHLY_ON, required=False, initial="day")
    month_day = forms.IntegerField(min_value=1, max_value=31, required=False, initial=1)
    nth = forms.TypedChoiceField(choices=NTHS, coerce=int, required=False, empty_value=None)
    nth_weekday = forms.ChoiceField(choices=WEEKDAYS, required=False, label="Weekday")
    once_at = forms.DateTimeField(
        required=False,
        label="At (local date and time)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"],
    )

    parsed: ParsedText | None = None
    """The text in words, read (set by ``clean`` when the field is filled)."""
    preview_only = False
    """Set by the live preview: check only what the timing depends on, keep the ``Timing``."""
    timing: Timing | None = None

    class Meta:
        model = Schedule
        fields = (*EDITABLE, "cost_estimate")
        field_classes = {
            "kwargs": PayloadJSONField,
            "options": PayloadJSONField,
            "args": PayloadJSONField,
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.request = kwargs.pop("request", None)
        super().__init__(*args, **kwargs)
        adding = self.instance._state.adding
        self.fields["expected_version"].initial = 0 if adding else self.instance.version
        if "kind" in self.fields:
            self.fields["kind"].required = False
            self.fields["rule"].required = False
        self._choices()
        if not adding and not self.is_bound:
            self._builder_initial()
        self.warnings: list[str] = []
        self.definition: Definition | None = None
        """The definition as checked (set by ``clean`` when it is valid)."""

    def _builder_initial(self) -> None:
        spec = from_rule(self.instance.kind, self.instance.rule)
        if spec is None:
            self.initial["repeat"] = "advanced"
            return
        self.initial.update(
            repeat=spec.repeat,
            every=spec.every,
            at_times=format_times(spec.at_times) if spec.at_times else "09:00",
            weekdays=list(spec.weekdays),
            monthly_on=spec.monthly_on,
            month_day=spec.month_day or 1,
            nth=spec.nth,
            nth_weekday=spec.nth_weekday,
            once_at=spec.once_at,
        )

    # -- validation --------------------------------------------------------------------------

    def clean_task(self) -> str:
        name = (self.cleaned_data.get("task") or "").strip()
        if self.preview_only:
            return name  # checked when saving, not at every key press
        if self.instance.pk and name == self.instance.task and "task" not in self.changed_data:
            return name
        try:
            check_target(name)
        except ScheduleValidationError as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None
        return name

    def clean_kwargs(self) -> Any:
        kwargs = self.cleaned_data.get("kwargs")
        if isinstance(kwargs, list):
            raise forms.ValidationError(POSITIONAL_HINT, code="positional")
        try:  # the service refuses it again when saving; here it is a field error
            check_payload(kwargs)
        except ScheduleValidationError as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None
        return kwargs

    def clean_args(self) -> Any:
        args = self.cleaned_data.get("args")
        if args in (None, ""):
            return []
        if not isinstance(args, list):
            raise forms.ValidationError(
                'positional arguments must be a JSON list, e.g. [1, "eu"]', code="invalid"
            )
        try:
            check_payload(args, "args")
        except ScheduleValidationError as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None
        return args

    def clean_owner(self) -> Any:
        """The owner rules of the service, as a field error (the service applies them again
        when saving)."""
        owner = self.cleaned_data.get("owner")
        user = getattr(self.request, "user", None)
        if owner is None and user is not None and self.instance._state.adding:
            return user  # the owner defaults to whoever creates the schedule
        if user is None or "owner" not in self.changed_data:
            return owner
        current = None if self.instance._state.adding else self.instance
        try:
            tenant = self.cleaned_data.get("tenant", self._tenant())  # cleaned before owner
            permissions.with_owner_rules({"owner": owner, "tenant": tenant}, user, current=current)
            permissions.check_owner_present(owner, str(self.instance.origin or "admin"))
            # Another owner runs what this page defines with their rights (run_schedule).
            check_runner_edit(user, WHAT_RUNS, owner, owner_changed=current is not None)
        except ScheduleValidationError as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from None
        except OperatorPermissionDenied as exc:
            raise forms.ValidationError(str(exc), code="owner_not_allowed") from None
        return owner

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if "options" in cleaned:
            cleaned["options"] = cleaned["options"] or {}
        events.apply(self, cleaned, str(cleaned.get("tenant", self._tenant()) or ""))
        self._check_version(cleaned)
        built = self._apply_builder(cleaned)
        blocking = (*TIMING_FIELDS, *BUILDER_FIELDS) if self.preview_only else SEMANTIC_FIELDS
        if any(name in self.errors for name in (*blocking, *BUILDER_FIELDS)):
            return cleaned  # a field is already refused: the definition is incomplete
        self._default_anchor(cleaned)
        self._validate(cleaned, built=built)
        self._warn_owner(cleaned)
        return cleaned

    def _check_version(self, cleaned: dict[str, Any]) -> None:
        if self.instance._state.adding:
            return
        current = Schedule.objects.filter(pk=self.instance.pk).values_list("version", flat=True)
        if cleaned.get("expected_version") != current.first():
            raise forms.ValidationError(
                "Someone changed this schedule while you were editing it; reload the page "
                "and apply your change again.",
                code="stale_version",
            )

    def _apply_builder(self, cleaned: dict[str, Any]) -> bool:
        """Write ``kind``/``rule`` from the builder; False in the advanced mode."""
        if "repeat" not in self.fields:
            return False
        if (cleaned.get("words") or "").strip():
            return self._apply_words(cleaned)
        repeat = cleaned.get("repeat") or "advanced"
        if repeat == "advanced":
            for name in ("kind", "rule"):
                if not cleaned.get(name):
                    self.add_error(name, forms.ValidationError(f"{name} is required"))
            return False
        try:
            spec = BuilderSpec(
                repeat=repeat,
                every=cleaned.get("every"),
                at_times=parse_times(cleaned.get("at_times") or "")
                if repeat in ("daily", "weekly", "monthly")
                else (),
                weekdays=tuple(cleaned.get("weekdays") or ()),
                monthly_on=cleaned.get("monthly_on") or "day",
                month_day=cleaned.get("month_day"),
                nth=cleaned.get("nth"),
                nth_weekday=cleaned.get("nth_weekday") or "",
                once_at=cleaned.get("once_at"),
            )
            kind, rule = to_rule(spec)
        except BuilderError as exc:
            self.add_error(exc.field if exc.field in self.fields else "repeat", exc.message)
            return True
        if (kind, rule) != self._shown_rule():
            cleaned["kind"], cleaned["rule"] = kind, rule
        # else the builder says what the page showed: the stored rule (or the one typed in the
        # advanced inputs) stays, in its own form (a 3600 s interval shows as "every 1 hours",
        # which the builder would write as cron).
        return True

    def _shown_rule(self) -> tuple[str, str] | None:
        """The rule the builder showed for the stored schedule, as the builder writes it."""
        if self.instance._state.adding:
            return None
        spec = from_rule(self.instance.kind, self.instance.rule)
        try:
            return to_rule(spec) if spec is not None else None
        except BuilderError:
            return None

    def _apply_words(self, cleaned: dict[str, Any]) -> bool:
        """The text in words replaces the builder's choices (the page's script has usually
        copied them into the builder already): the structured rule is what is saved."""
        try:
            self.parsed = parse_text(cleaned["words"], timezone=cleaned.get("timezone") or "UTC")
        except ScheduleValidationError as exc:
            self.add_error("words", forms.ValidationError(exc.message, code=exc.code))
            return True
        cleaned.update(timing_values(self.parsed))
        return True

    def _default_anchor(self, cleaned: dict[str, Any]) -> None:
        """RRULE and interval rules need an anchor; the default has no seconds and no
        microseconds the user never chose (a 17:00 rule must not run at 17:00:43)."""
        if cleaned.get("kind") in (Kind.RRULE, Kind.INTERVAL) and not cleaned.get("anchor"):
            cleaned["anchor"] = self._now().replace(second=0, microsecond=0)

    def _now(self) -> datetime:
        return timezone.now().astimezone(UTC)

    def _validate(self, cleaned: dict[str, Any], *, built: bool) -> None:
        if self.preview_only:
            try:
                self.timing = timing_only(cleaned)
            except ScheduleValidationError as exc:
                target = error_target(exc.field, self.fields, built=built)
                self.add_error(target, error_message(exc.field, exc.message))
            return
        values = {name: cleaned.get(name) for name in SEMANTIC_FIELDS if name in cleaned}
        values["kwargs"] = values.get("kwargs") or {}
        values["args"] = values.get("args") or []
        now = self._now()
        stored = None if self.instance._state.adding else self.instance.stored_definition()
        try:
            # No stand-in anchor: what is checked here is what is stored, and an anchor the
            # person left empty stays empty (``_default_anchor`` gave the rules that need one
            # a whole minute already).
            given = given_on_page(values, stored)
            definition = parse_definition(given, now=now, current=stored)
            timing = definition.timing
            adding = self.instance._state.adding
            # The services' question, asked when they will ask it (a new or changed
            # definition): the first slot and the searches around it, within the settings'
            # search budget, so a rule rarer than the budget sees is refused on its field.
            redefined = adding or any(v != getattr(self.instance, k) for k, v in values.items())
            if redefined:
                first_slot_from(timing, now, required="rule" in self.changed_data or adding)
            self.definition = definition  # what the services store, parsed once
        except ScheduleValidationError as exc:
            target = error_target(exc.field, self.fields, built=built)
            message = error_message(exc.field, exc.message)
            self.add_error(target, forms.ValidationError(message, code=exc.code))

    def _warn_owner(self, cleaned: dict[str, Any]) -> None:
        owner = cleaned.get("owner")
        if owner is not None and not (owner.is_active and owner.has_perm(RUN_PERMISSION)):
            self.warnings.append(
                f"The owner {owner} does not have the permission {RUN_PERMISSION!r} (or is "
                "inactive): every run will end 'forbidden' until they get it. Grant it, or "
                "choose another owner."
            )
