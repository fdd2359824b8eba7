"""The dashboard's forms for rules, channels and silences, checked as the API checks them."""

from __future__ import annotations

from datetime import UTC, timedelta

from django import forms
from django.utils import timezone

from streams.forms import UtcDateTimeField
from streams.models import Stream

from .models import AlertRule, Channel, Silence
from .rules import channel_errors, rule_errors

KEEP = "leave blank to keep the saved one"


class RuleForm(forms.ModelForm):
    """A rule: the kind decides which of threshold, minutes and retention hours it uses."""

    class Meta:
        model = AlertRule
        fields = (
            "name", "kind", "stream", "threshold_seconds", "for_minutes", "retention_hours", "repeat_minutes",
            "channels", "enabled",
        )  # fmt: skip
        widgets = {"channels": forms.CheckboxSelectMultiple}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["stream"].queryset = Stream.objects.order_by("name")
        self.fields["stream"].empty_label = "every stream"

    def clean(self) -> dict:
        """Add the kind's errors (settings it cannot work with, the no-data kind while it is off)."""
        data = super().clean()
        errors = rule_errors(data.get("kind", ""), data.get("for_minutes"), data.get("retention_hours"))
        for field, message in errors.items():
            self.add_error(field, message)
        return data


class ChannelForm(forms.ModelForm):
    """A channel; the secret and the Slack URL are never shown back, and a blank one keeps the saved one."""

    secret = forms.CharField(
        required=False, max_length=200, widget=forms.PasswordInput(render_value=False),
        help_text="webhook: the HMAC-SHA256 key receivers verify X-Cdcweb-Signature with",
    )  # fmt: skip
    url = forms.URLField(
        required=False, max_length=500, assume_scheme="https", label="URL",
        help_text="webhook: where the JSON is POSTed",
    )  # fmt: skip
    slack_url = forms.URLField(
        required=False, max_length=500, widget=forms.PasswordInput(render_value=False), assume_scheme="https",
        label="Slack URL", help_text="Slack: the incoming webhook URL (a secret)",
    )  # fmt: skip
    email_to = forms.CharField(
        required=False, label="Email to", help_text="email: addresses, comma separated"
    )

    class Meta:
        model = Channel
        fields = ("name", "kind", "url", "secret", "slack_url", "email_to", "enabled")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial["email_to"] = ", ".join(self.instance.email_to or [])
        if self.instance.pk:
            for field in ("secret", "slack_url"):
                if getattr(self.instance, field):
                    self.fields[field].help_text += f" — set; {KEEP}"

    def clean_email_to(self) -> list[str]:
        """Return the addresses as a list."""
        return [a.strip() for a in self.cleaned_data.get("email_to", "").split(",") if a.strip()]

    def clean(self) -> dict:
        """Keep the saved secrets when left blank; add what the kind lacks."""
        data = super().clean()
        for field in ("secret", "slack_url"):
            if not data.get(field) and self.instance.pk:
                data[field] = getattr(self.instance, field)
        values = {f: data.get(f) or "" for f in ("kind", "url", "secret", "slack_url")}
        for field, message in channel_errors(**values, email_to=data.get("email_to") or []).items():
            self.add_error(field if field in self.fields else None, message)
        return data


class SilenceForm(forms.ModelForm):
    """A silence of a rule, a stream, or a rule on a stream, from now until a time (UTC)."""

    ends_at = UtcDateTimeField(label="Ends at (UTC)")

    class Meta:
        model = Silence
        fields = ("rule", "stream", "ends_at", "comment")
        widgets = {"comment": forms.TextInput}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["rule"].empty_label = "any rule"
        self.fields["stream"].empty_label = "any stream"
        self.fields["stream"].queryset = Stream.objects.order_by("name")
        if not self.instance.pk:
            self.initial.setdefault("ends_at", (timezone.now() + timedelta(hours=1)).astimezone(UTC))

    def clean(self) -> dict:
        """Refuse a silence naming nothing, or one already over."""
        data = super().clean()
        if not data.get("rule") and not data.get("stream"):
            self.add_error(None, "name a rule, a stream, or both")
        ends = data.get("ends_at")
        if ends is not None and ends <= (self.instance.starts_at or timezone.now()):
            self.add_error("ends_at", "a silence must end after it starts")
        return data
