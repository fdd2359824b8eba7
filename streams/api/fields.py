"""API fields shared by every API of cdcweb."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from rest_framework import serializers

from streams.times import parse_time


class StrictDateTimeField(serializers.DateTimeField):
    """A timestamp that must carry a time zone (a guessed zone reads the wrong hour)."""

    def to_internal_value(self, value):
        """Parse ISO 8601 with a zone; refuse naive or malformed input with a field error."""
        if isinstance(value, datetime):
            if timezone.is_naive(value):
                self.fail("naive")
            return value
        if not isinstance(value, str) or value.strip().lower() == "now" or value.strip()[:1] in "+-":
            self.fail("invalid", format="ISO 8601 with a time zone, e.g. 2026-01-01T12:00:00Z")
        try:
            return parse_time(value)
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None

    default_error_messages = {
        **serializers.DateTimeField.default_error_messages,
        "naive": "the timestamp has no time zone: add 'Z' or an offset such as +00:00",
    }
