"""Streams: one source of change data to read or watch, its state log and its errors."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from . import kinds

# How often a source proves progress when idle (a heartbeat, a poll): Spanner's own
# bounds for heartbeat_milliseconds, which every kind of source reads within.
MIN_HEARTBEAT_MS = 1_000
MAX_HEARTBEAT_MS = 300_000

# A reader's lease is renewed every third of it, and a read proves progress once a
# heartbeat (or poll) interval: three must fit in a lease, or an idle read loses it.
HEARTBEATS_PER_LEASE = 3


def heartbeat_misfit(heartbeat_ms: int | None) -> str:
    """Return why a heartbeat (or poll) interval does not fit the lease, or "" when it does."""
    lease = settings.CDC_LEASE_SECONDS
    if heartbeat_ms is None or heartbeat_ms * HEARTBEATS_PER_LEASE <= lease * 1000:
        return ""
    return (
        f"a heartbeat (or poll) interval of {heartbeat_ms:,} ms does not fit {HEARTBEATS_PER_LEASE} times "
        f"in the {lease:,} s lease (CDC_LEASE_SECONDS): use at most {lease * 1000 // HEARTBEATS_PER_LEASE:,} "
        f"ms, or a lease of at least {-(-heartbeat_ms * HEARTBEATS_PER_LEASE // 1000):,} s"
    )


# \Z, not $: "$" also matches before a trailing newline, so "orders\n" passed.
name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z",
    "use letters, digits, '.', '_' or '-', starting with a letter or digit",
)


class Stream(models.Model):
    """One source of change data (a Spanner change stream, a table, ...), read from start_at to end_at.

    Its kind (source_kind) says what the source is; the kind's own settings (project,
    database, table, ...) are in `connection`, checked by the kind before they are
    stored (partitions/sources/<kind>/). The state machine is the same for every kind.
    """

    class State(models.TextChoices):
        NOT_STARTED = "NOT_STARTED", "Not started"
        STARTING = "STARTING", "Starting"
        RUNNING = "RUNNING", "Running"
        DRAINING = "DRAINING", "Draining"
        PAUSED = "PAUSED", "Paused"
        FAILED = "FAILED", "Failed"
        FAILED_PERMANENTLY = "FAILED_PERMANENTLY", "Failed permanently"

    name = models.CharField(max_length=100, unique=True, validators=[name_validator])
    # Choices from the registered kinds (streams/kinds.py), read when needed: a new kind
    # needs no migration.
    source_kind = models.CharField(max_length=40, choices=kinds.choices, default="spanner_change_stream")
    # The kind's connection settings, as its clean() returned them.
    connection = models.JSONField(default=dict, blank=True)
    heartbeat_ms = models.PositiveIntegerField(
        default=10_000,
        validators=[MinValueValidator(MIN_HEARTBEAT_MS), MaxValueValidator(MAX_HEARTBEAT_MS)],
    )
    start_at = models.DateTimeField(default=timezone.now)
    end_at = models.DateTimeField(null=True, blank=True)
    # At most a day: a longer window only delays checkpoints, and an unbounded value
    # overflowed PostgreSQL's integer column (found by schemathesis).
    window_seconds = models.PositiveIntegerField(
        default=60, validators=[MinValueValidator(1), MaxValueValidator(86_400)]
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.NOT_STARTED, editable=False)
    state_reason = models.TextField(blank=True, editable=False)
    state_changed_at = models.DateTimeField(default=timezone.now, editable=False)
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    next_retry_at = models.DateTimeField(null=True, blank=True, editable=False)
    paused_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set by recover ("now" / "timestamp"): the start task re-runs the initial query here.
    resume_from = models.DateTimeField(null=True, blank=True, editable=False)
    # While STARTING: until when a start task holds the start (the database's time); one at a
    # time, and a beat sweep sends another once it lapsed (a task lost with its worker).
    start_claimed_until = models.DateTimeField(null=True, blank=True, editable=False)
    # Set when every partition finished at the end timestamp (the stream is complete).
    reached_end_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Landed files are kept by the stream's id; a stream that landed before that also owns the
    # stream=<this name> directory it landed in (set once by a migration, never by a rename).
    landing_name = models.CharField(max_length=100, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end_at__isnull=True) | models.Q(end_at__gt=models.F("start_at")),
                name="stream_end_after_start",
                violation_error_message="the end timestamp must be after the start timestamp",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def setting(self, name: str, default=""):
        """Return one of the kind's connection settings."""
        return self.connection.get(name, default)

    def clean(self) -> None:
        """Refuse an end timestamp that is not after the start, and a heartbeat too long for the lease."""
        super().clean()
        if self.end_at is not None and self.start_at is not None and self.end_at <= self.start_at:
            raise ValidationError({"end_at": "the end timestamp must be after the start timestamp"})
        misfit = heartbeat_misfit(self.heartbeat_ms)
        if misfit:
            raise ValidationError({"heartbeat_ms": misfit})


class StreamTransition(models.Model):
    """One move of a stream from one state to another: when, by whom, and why."""

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="transitions")
    from_state = models.CharField(max_length=20, choices=Stream.State.choices)
    to_state = models.CharField(max_length=20, choices=Stream.State.choices)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    by = models.CharField(max_length=150, help_text="user name or task name")
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.stream_id}: {self.from_state} -> {self.to_state}"


class StreamError(models.Model):
    """One error met while reading a stream (or one of its partitions), and its attempt number."""

    class Kind(models.TextChoices):
        RETRYABLE = "retryable", "Retryable"
        PERMANENT = "permanent", "Permanent"
        RECORD = "record", "Malformed record"
        LANDING = "landing", "Landing zone"
        INTERNAL = "internal", "Internal"

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="errors")
    # The partition's token, not a foreign key: streams knows nothing of partitions, and
    # the error outlives a partition that a recovery deletes.
    partition_token = models.CharField(max_length=1000, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    code = models.CharField(max_length=100, blank=True)
    message = models.TextField()
    attempt = models.PositiveIntegerField(default=1)
    # A watched source's own identity of the error (Datastream's error UUID) and its details:
    # polling the same error again finds it stored and adds nothing ("" for our own errors).
    uuid = models.CharField(max_length=200, blank=True)
    details = models.JSONField(default=dict, blank=True)
    # When the watched source last reported it (None: our own error). The retention job keeps an
    # error the source still reports: deleted, the next poll would store it again as new.
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["stream", "uuid"], condition=~models.Q(uuid=""), name="streamerror_unique_uuid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.code}: {self.message[:60]}"


class StreamOperation(models.Model):
    """One operator action on a watched stream, carried out by its source: how it went, step by step.

    A watched kind's stream (Datastream) is paused, resumed, recovered and backfilled by the
    source itself through a long-running operation; a task follows it and writes its progress
    here, and a refusal in the source's own words.
    """

    class Status(models.TextChoices):
        PENDING = "PENDING", "Pending"
        RUNNING = "RUNNING", "Running"
        DONE = "DONE", "Done"
        REFUSED = "REFUSED", "Refused"
        FAILED = "FAILED", "Failed"

    FINISHED = (Status.DONE, Status.REFUSED, Status.FAILED)

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="operations")
    # pause, resume, recover, start_backfill, stop_backfill
    action = models.CharField(max_length=40)
    target = models.CharField(max_length=200, blank=True)  # the object of a backfill
    arguments = models.JSONField(default=dict, blank=True)
    by = models.CharField(max_length=150)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    message = models.TextField(blank=True)  # the source's status message, or its refusal
    code = models.CharField(max_length=100, blank=True)
    operation = models.CharField(max_length=500, blank=True)  # the source's operation name
    elapsed_seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target} ({self.status})".replace("  ", " ")


class AuditEntry(models.Model):
    """One operator action on a stream or one of its partitions: who, when, what, and the state before.

    Stream actions (start, pause, resume, recover, edits) and partition actions (release a
    lease, re-read) are all written here, in the transaction that does them.
    """

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="audit_entries")
    # The partition's id and token, not a foreign key: streams knows nothing of partitions,
    # and the entry outlives a partition that a recovery deletes. 0 / "": a stream action.
    partition_id = models.BigIntegerField(default=0)
    partition_token = models.CharField(max_length=1000, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    by = models.CharField(max_length=150, help_text="user name, or the command that acted")
    action = models.CharField(max_length=50)
    detail = models.TextField(blank=True)
    before = models.JSONField(default=dict, blank=True, help_text="the state acted on, as it was before")

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["stream", "-at"], name="auditentry_stream_at")]

    def __str__(self) -> str:
        return f"{self.stream_id}: {self.action} by {self.by}"
