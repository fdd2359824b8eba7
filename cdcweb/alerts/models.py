"""Alerts: rules over streams' progress, where to send what they find, silences, episodes, attempts."""

from __future__ import annotations

import uuid

from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from cdcweb.encryption import EncryptedTextField, Unreadable
from streams.models import Stream

# The raw lag samples (10 s tier) are kept for 6 hours: a window may not reach past them.
MAX_WINDOW_MINUTES = 360
MAX_REPEAT_MINUTES = 7 * 24 * 60
MAX_THRESHOLD_SECONDS = 30 * 24 * 3600
MAX_RETENTION_HOURS = 30 * 24  # Spanner keeps a change stream's records for at most 30 days


class Channel(models.Model):
    """One place alerts are sent to: a signed JSON webhook, a Slack-compatible webhook, or email."""

    class Kind(models.TextChoices):
        WEBHOOK = "webhook", "Webhook (JSON, HMAC-SHA256 signed)"
        SLACK = "slack", "Slack-compatible incoming webhook"
        EMAIL = "email", "Email"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    url = models.URLField(max_length=500, blank=True, help_text="webhook: where the JSON is POSTed")
    # Write-only in the API and the pages (shown to nobody once saved), and encrypted in the
    # database (cdcweb/encryption.py); the forms and serializers bound their length.
    secret = EncryptedTextField(blank=True, help_text="webhook: the HMAC-SHA256 key")
    slack_url = EncryptedTextField(blank=True, help_text="Slack: the incoming webhook URL")
    email_to = models.JSONField(default=list, blank=True, help_text="email: the recipients' addresses")
    enabled = models.BooleanField(default=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def unreadable(self) -> list[str]:
        """Return the secrets the keys in force cannot decrypt (CDC_SECRETS_KEY changed): save them again."""
        return [name for name in ("secret", "slack_url") if isinstance(getattr(self, name), Unreadable)]


# A rule's name goes into mail subjects and Slack text: one line of printable characters.
one_line = RegexValidator(r"^[^\x00-\x1f\x7f]*\Z", "use one line of printable characters (no line breaks)")


class AlertRule(models.Model):
    """One condition watched on one stream (or on every stream) and the channels its alerts go to."""

    class Kind(models.TextChoices):
        LAG_ABOVE = "lag_above", "Lag above a threshold for a while"
        LAG_GROWING = "lag_growing", "Lag growing in every sample"
        PARTITION_STALLED = "partition_stalled", "A partition stalled"
        STREAM_FAILED = "stream_failed", "Stream failed"
        RETENTION = "retention", "Stopped near the end of retention"
        NO_DATA = "no_data", "No data change records while running"

    name = models.CharField(max_length=100, unique=True, validators=[one_line])
    kind = models.CharField(max_length=30, choices=Kind.choices)
    stream = models.ForeignKey(
        Stream, on_delete=models.CASCADE, null=True, blank=True, related_name="alert_rules",
        help_text="blank: every stream",
    )  # fmt: skip
    threshold_seconds = models.FloatField(
        default=300.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(MAX_THRESHOLD_SECONDS)],
        help_text="lag above: the lag, in seconds, that must be exceeded",
    )
    for_minutes = models.PositiveIntegerField(
        default=5,
        validators=[MaxValueValidator(MAX_WINDOW_MINUTES)],
        help_text="lag above, stream failed: how long it must hold; no data: how long without records",
    )
    retention_hours = models.FloatField(
        default=6.0,
        validators=[MinValueValidator(0.0), MaxValueValidator(MAX_RETENTION_HOURS)],
        help_text="retention: fire when fewer hours than this are left to resume",
    )
    repeat_minutes = models.PositiveIntegerField(
        default=0,
        validators=[MaxValueValidator(MAX_REPEAT_MINUTES)],
        help_text="send the alert again this often while it holds; 0: once",
    )
    channels = models.ManyToManyField(Channel, blank=True, related_name="rules")
    enabled = models.BooleanField(default=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = [models.Index(fields=["enabled", "kind"], name="alertrule_enabled_kind")]

    def __str__(self) -> str:
        return self.name


class Silence(models.Model):
    """A span in which alerts of a rule, of a stream, or of a rule on a stream are recorded but not sent."""

    rule = models.ForeignKey(
        AlertRule, on_delete=models.CASCADE, null=True, blank=True, related_name="silences"
    )
    stream = models.ForeignKey(
        Stream, on_delete=models.CASCADE, null=True, blank=True, related_name="alert_silences"
    )
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField()
    comment = models.TextField(blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-ends_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(rule__isnull=False) | models.Q(stream__isnull=False),
                name="silence_names_rule_or_stream",
                violation_error_message="a silence names a rule, a stream, or both",
            ),
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")),
                name="silence_ends_after_start",
                violation_error_message="a silence must end after it starts",
            ),
        ]
        indexes = [models.Index(fields=["ends_at"], name="silence_ends_at")]

    def __str__(self) -> str:
        return f"silence {self.pk} until {self.ends_at:%Y-%m-%d %H:%M}"

    def covers(self, rule_id: int, stream_id: int, now) -> bool:
        """Return True if this silence mutes the rule's alert on the stream at now."""
        return (
            self.starts_at <= now < self.ends_at
            and self.rule_id in (None, rule_id)
            and self.stream_id in (None, stream_id)
        )


class Alert(models.Model):
    """One episode of a rule holding for a stream: what it fired on, what was sent, when it ended."""

    class State(models.TextChoices):
        FIRING = "FIRING", "Firing"
        RESOLVED = "RESOLVED", "Resolved"

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField(max_length=30, choices=AlertRule.Kind.choices, help_text="the rule kind")
    state = models.CharField(max_length=10, choices=State.choices, default=State.FIRING)
    summary = models.CharField(max_length=300)
    evidence = models.JSONField(default=dict, blank=True, help_text="what the rule fired on")
    silenced = models.BooleanField(default=False, help_text="muted by a silence when last evaluated")
    fired_at = models.DateTimeField(default=timezone.now)
    last_sent_at = models.DateTimeField(null=True, blank=True, help_text="last notice sent while firing")
    notices = models.PositiveIntegerField(default=0, help_text="firing notices sent (first and repeats)")
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-fired_at", "-id"]
        constraints = [
            # Two evaluations at once (a late beat) cannot open the same alert twice.
            models.UniqueConstraint(
                fields=["rule", "stream"], condition=models.Q(state="FIRING"), name="alert_one_firing"
            ),
        ]
        indexes = [
            models.Index(fields=["state", "fired_at"], name="alert_state_fired"),
            models.Index(fields=["stream", "fired_at"], name="alert_stream_fired"),
        ]

    def __str__(self) -> str:
        return f"{self.state} {self.summary[:60]}"


class DeliveryAttempt(models.Model):
    """One try at sending one notice of an alert to one channel, and how it ended."""

    class Event(models.TextChoices):
        FIRING = "firing", "Firing"
        REPEAT = "repeat", "Still firing"
        RESOLVED = "resolved", "Resolved"

    class Status(models.TextChoices):
        SENT = "SENT", "Sent"
        RETRYING = "RETRYING", "Failed, will retry"
        FAILED = "FAILED", "Failed"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    # Kept when the channel is deleted: the history still says where it went.
    channel = models.ForeignKey(Channel, on_delete=models.SET_NULL, null=True, related_name="deliveries")
    channel_name = models.CharField(max_length=100)
    notice = models.UUIDField(default=uuid.uuid4, help_text="shared by every attempt at one notice")
    event = models.CharField(max_length=10, choices=Event.choices)
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)
    duration_ms = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["alert", "at"], name="delivery_alert_at"),
            models.Index(fields=["notice"], name="delivery_notice"),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.channel_name}: {self.status}"
