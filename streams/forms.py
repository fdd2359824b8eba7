"""Form fields shared by every page of cdcweb."""

from __future__ import annotations

from django import forms

from streams.times import parse_form_time, parse_time


class UtcDateTimeField(forms.DateTimeField):
    """A date and time typed in UTC (the browser's datetime-local input), 1970 to 2999.

    Django's own field reads 2026-02-30 as an error too, but takes year 1, whose
    conversions overflow later; this refuses anything parse_form_time refuses.
    """

    widget = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")

    def to_python(self, value):
        """Return an aware UTC datetime, None when blank, or raise a ValidationError saying why."""
        if value in self.empty_values:
            return None
        if hasattr(value, "tzinfo"):
            return super().to_python(value)
        try:
            return parse_form_time(str(value))
        except ValueError as error:
            raise forms.ValidationError(str(error), code="invalid") from None


class ZonedDateTimeField(forms.DateTimeField):
    """A timestamp for scripts (API filters): ISO 8601 with a zone, 1970 to 2999, as the API's bodies take."""

    def to_python(self, value):
        """Return an aware UTC datetime, None when blank, or raise a ValidationError saying why."""
        if value in self.empty_values:
            return None
        if hasattr(value, "tzinfo"):
            return super().to_python(value)
        text = str(value).strip()
        if text.lower() == "now" or text[:1] in "+-":
            raise forms.ValidationError("use ISO 8601 with a time zone, e.g. 2026-01-01T12:00:00Z")
        try:
            return parse_time(text)
        except ValueError as error:
            raise forms.ValidationError(str(error), code="invalid") from None
