"""Alerts API serializers: rules, channels (secrets write-only), silences, alerts with their attempts."""

from __future__ import annotations

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from cdcweb.alerts.messages import lag_chart_path
from cdcweb.alerts.models import Alert, AlertRule, Channel, DeliveryAttempt, Silence
from cdcweb.alerts.rules import MAX_RECIPIENTS, channel_errors, describe, rule_errors
from streams.access import can_operate
from streams.api.fields import StrictDateTimeField

AUDIT = ("created_by", "created_at", "updated_at")


def _merged(serializer: serializers.Serializer, attrs: dict, field: str, default=None):
    """Return a field's value after this write: the new one, else the saved one, else the default."""
    if field in attrs:
        return attrs[field]
    return getattr(serializer.instance, field, default) if serializer.instance is not None else default


class AddressesField(serializers.ListField):
    """A list of email addresses whose errors are keyed by position as text (JSON keys are strings)."""

    child = serializers.EmailField(max_length=254)

    def to_internal_value(self, data):
        """Validate every address; an error names the position of the bad one."""
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as error:
            if isinstance(error.detail, dict):
                raise serializers.ValidationError({str(k): v for k, v in error.detail.items()}) from None
            raise


class AlertRuleSerializer(serializers.ModelSerializer):
    """A rule: its kind, the stream it watches (null: every stream), its settings and channels."""

    stream_name = serializers.CharField(source="stream.name", read_only=True, allow_null=True)
    condition = serializers.SerializerMethodField()
    channels = serializers.PrimaryKeyRelatedField(many=True, queryset=Channel.objects.all(), required=False)

    class Meta:
        model = AlertRule
        fields = (
            "id", "name", "kind", "stream", "stream_name", "condition", "threshold_seconds", "for_minutes",
            "retention_hours", "repeat_minutes", "channels", "enabled", *AUDIT,
        )  # fmt: skip
        read_only_fields = AUDIT

    def get_condition(self, rule: AlertRule) -> str:
        """Return the rule's condition in words."""
        return describe(rule)

    def validate(self, attrs: dict) -> dict:
        """Refuse settings the kind cannot work with (and the no-data kind while it is off)."""
        kind = _merged(self, attrs, "kind")
        errors = rule_errors(
            kind, _merged(self, attrs, "for_minutes", 5), _merged(self, attrs, "retention_hours", 6.0)
        )
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class ChannelSerializer(serializers.ModelSerializer):
    """A channel. The webhook secret and the Slack URL are written, never read back: *_set says if one is."""

    url = serializers.URLField(
        max_length=500, required=False, allow_blank=True, allow_null=True,
        help_text="webhook: where the JSON is POSTed; null in answers to viewers (only operators see it)",
    )  # fmt: skip
    secret = serializers.CharField(write_only=True, required=False, allow_blank=True, max_length=200)
    slack_url = serializers.URLField(write_only=True, required=False, allow_blank=True, max_length=500)
    secret_set = serializers.SerializerMethodField()
    slack_url_set = serializers.SerializerMethodField()
    email_to = AddressesField(required=False, max_length=MAX_RECIPIENTS)

    class Meta:
        model = Channel
        fields = (
            "id", "name", "kind", "url", "secret", "secret_set", "slack_url", "slack_url_set", "email_to",
            "enabled", *AUDIT,
        )  # fmt: skip
        read_only_fields = AUDIT

    def to_representation(self, channel: Channel) -> dict:
        """Represent the channel; its URL only to operators (it may hold a receiver's token)."""
        data = super().to_representation(channel)
        request = self.context.get("request")
        if request is None or not can_operate(request.user):
            data["url"] = None
        return data

    def validate_url(self, value: str | None) -> str:
        """Store a blank URL for null (a viewer's answer sent back as it came)."""
        return value or ""

    def get_secret_set(self, channel: Channel) -> bool:
        """Return True if the channel has a signing secret."""
        return bool(channel.secret)

    def get_slack_url_set(self, channel: Channel) -> bool:
        """Return True if the channel has a Slack URL."""
        return bool(channel.slack_url)

    def validate(self, attrs: dict) -> dict:
        """Keep saved secrets when none (or a blank) is sent; refuse what the kind lacks."""
        for field in ("secret", "slack_url"):
            if attrs.get(field) == "" and self.instance is not None:
                attrs.pop(field)
        values = {f: _merged(self, attrs, f, "") for f in ("kind", "url", "secret", "slack_url")}
        errors = channel_errors(**values, email_to=_merged(self, attrs, "email_to", []))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class SilenceSerializer(serializers.ModelSerializer):
    """A silence of a rule, a stream, or a rule on a stream, from starts_at (default now) to ends_at."""

    starts_at = StrictDateTimeField(required=False)
    ends_at = StrictDateTimeField()
    active = serializers.SerializerMethodField()

    class Meta:
        model = Silence
        fields = (
            "id",
            "rule",
            "stream",
            "starts_at",
            "ends_at",
            "comment",
            "active",
            "created_by",
            "created_at",
        )
        read_only_fields = ("created_by", "created_at")

    def get_active(self, silence: Silence) -> bool:
        """Return True if the silence mutes alerts now."""
        return silence.starts_at <= timezone.now() < silence.ends_at

    def validate(self, attrs: dict) -> dict:
        """Refuse a silence naming nothing, or ending before it starts."""
        if _merged(self, attrs, "rule") is None and _merged(self, attrs, "stream") is None:
            raise serializers.ValidationError({"rule": "name a rule, a stream, or both"})
        starts = _merged(self, attrs, "starts_at") or timezone.now()
        if _merged(self, attrs, "ends_at") <= starts:
            raise serializers.ValidationError({"ends_at": "a silence must end after it starts"})
        return attrs


class DeliveryAttemptSerializer(serializers.ModelSerializer):
    """One attempt at sending a notice: to which channel, which try, how it ended."""

    class Meta:
        model = DeliveryAttempt
        fields = (
            "id", "channel", "channel_name", "notice", "event", "attempt", "status", "http_status", "error",
            "at", "duration_ms",
        )  # fmt: skip
        read_only_fields = fields


class AlertLinksSerializer(serializers.Serializer):
    """Where to look: the alert's page and the stream's lag chart over the evidence window."""

    page = serializers.CharField()
    lag_chart = serializers.CharField()


class AlertSerializer(serializers.ModelSerializer):
    """An alert: rule, stream, state, times, whether it is silenced, and the evidence it fired on."""

    rule_name = serializers.CharField(source="rule.name", read_only=True)
    stream_name = serializers.CharField(source="stream.name", read_only=True)
    links = serializers.SerializerMethodField()

    class Meta:
        model = Alert
        fields = (
            "id", "rule", "rule_name", "stream", "stream_name", "kind", "state", "summary", "silenced",
            "fired_at", "last_sent_at", "notices", "resolved_at", "evidence", "links",
        )  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(AlertLinksSerializer)
    def get_links(self, alert: Alert) -> dict:
        """Return the alert page's and the lag chart's paths."""
        return {"page": reverse("alert-detail", args=[alert.pk]), "lag_chart": lag_chart_path(alert)}


class AlertDetailSerializer(AlertSerializer):
    """An alert with every delivery attempt of its notices, newest first."""

    deliveries = DeliveryAttemptSerializer(many=True, read_only=True)

    class Meta(AlertSerializer.Meta):
        fields = (*AlertSerializer.Meta.fields, "deliveries")
        read_only_fields = fields
