"""The stream form of each kind: the common fields and the kind's own settings (admin and pages).

The settings' fields come from the kind's declarations (cdcweb.dashboard.kinds); the
values go through the kind's clean() and are stored in Stream.connection. Once a
stream has started, its settings (and its start) are shown but cannot change.
"""

from __future__ import annotations

from django import forms

from partitions.sources import DEFAULT_KIND, KINDS
from streams.models import Stream
from streams.times import parse_time

from .kinds import SettingsError, clean_settings, form_field, frozen_changes
from .limits import end_misfit

COMMON_FIELDS = ("name", "heartbeat_ms", "start_at", "end_at", "window_seconds")


class StreamFormBase(forms.ModelForm):
    """A stream's common fields; stream_form() adds those of one kind."""

    kind_name = DEFAULT_KIND
    start_at = forms.CharField(
        label="Start", help_text="ISO 8601 with a zone (2026-01-01T12:00:00Z), 'now' or '-30m'", initial="now"
    )
    end_at = forms.CharField(label="End", required=False, help_text="ISO 8601 with a zone, or blank: no end")

    class Meta:
        model = Stream
        fields = COMMON_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        instance = self.instance
        if instance.pk:
            for setting in KINDS[self.kind_name].settings:
                self.initial.setdefault(setting.name, _shown(instance.connection.get(setting.name, "")))
            self.initial["start_at"] = instance.start_at.isoformat()
            self.initial["end_at"] = instance.end_at.isoformat() if instance.end_at else ""
            if instance.state != Stream.State.NOT_STARTED:
                frozen = [s.name for s in KINDS[self.kind_name].settings if not s.editable]
                for name in ("start_at", *frozen):
                    self.fields[name].disabled = True

    def clean_start_at(self):
        return _time(self.cleaned_data["start_at"], "start")

    def clean_end_at(self):
        text = self.cleaned_data["end_at"]
        end = _time(text, "end") if text else None
        misfit = end_misfit(self.instance, end)
        if misfit:
            raise forms.ValidationError(misfit)
        return end

    def clean(self):
        cleaned = super().clean()
        names = [s.name for s in KINDS[self.kind_name].settings]
        values = {name: cleaned.get(name) for name in names if name in cleaned}
        try:
            self.settings = clean_settings(self.kind_name, values)
        except SettingsError as refused:
            for name, message in refused.errors.items():
                self.add_error(name if name in self.fields else None, message)
            return cleaned
        if self.instance.pk and self.instance.state != Stream.State.NOT_STARTED:
            for name in frozen_changes(self.kind_name, self.instance.connection, self.settings):
                self.add_error(name, "cannot change once the stream has started")
        return cleaned

    def save(self, commit: bool = True) -> Stream:
        """Store the kind and its cleaned settings with the common fields."""
        stream = super().save(commit=False)
        stream.source_kind, stream.connection = self.kind_name, self.settings
        if commit:
            stream.save()
        return stream


def _shown(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _time(text: str, what: str):
    try:
        return parse_time(text)
    except ValueError as error:
        raise forms.ValidationError(f"the {what}: {error}") from None


def stream_form(kind_name: str) -> type[StreamFormBase]:
    """Return the form class of streams of one kind."""
    attrs = {s.name: form_field(s) for s in KINDS[kind_name].settings}
    name = "".join(part.title() for part in kind_name.split("_"))
    return type(f"{name}StreamForm", (StreamFormBase,), {**attrs, "kind_name": kind_name})
