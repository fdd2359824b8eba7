"""Streams: one Spanner change stream to read, its state log and its errors."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone

from partitions.changestream.query import MAX_HEARTBEAT_MS, MIN_HEARTBEAT_MS

name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
    "use letters, digits, '.', '_' or '-', starting with a letter or digit",
)
change_stream_validator = RegexValidator(
    r"^[A-Za-z][A-Za-z0-9_]{0,127}$",
    "use a letter followed by letters, digits or underscores (at most 128 characters)",
)


class Stream(models.Model):
    """One change stream of one Spanner database, read by cdcweb from start_at to end_at."""

    class State(models.TextChoices):
        NOT_STARTED = "NOT_STARTED", "Not started"
        STARTING = "STARTING", "Starting"
        RUNNING = "RUNNING", "Running"
        DRAINING = "DRAINING", "Draining"
        PAUSED = "PAUSED", "Paused"
        FAILED = "FAILED", "Failed"
        FAILED_PERMANENTLY = "FAILED_PERMANENTLY", "Failed permanently"

    class SourceKind(models.TextChoices):
        SPANNER_CHANGE_STREAM = "spanner_change_stream", "Spanner change stream"

    class Dialect(models.TextChoices):
        DETECT = "", "Detect"
        GOOGLESQL = "googlesql", "GoogleSQL"
        POSTGRESQL = "postgresql", "PostgreSQL"

    name = models.CharField(max_length=100, unique=True, validators=[name_validator])
    source_kind = models.CharField(
        max_length=40, choices=SourceKind.choices, default=SourceKind.SPANNER_CHANGE_STREAM
    )
    project = models.CharField(max_length=100)
    instance = models.CharField(max_length=100)
    database = models.CharField(max_length=100)
    change_stream = models.CharField(max_length=128, validators=[change_stream_validator])
    dialect = models.CharField(max_length=20, choices=Dialect.choices, default=Dialect.DETECT, blank=True)
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
    emulator_host = models.CharField(
        max_length=200, blank=True, help_text="host:port of an emulator; blank means the settings' value"
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.NOT_STARTED, editable=False)
    state_reason = models.TextField(blank=True, editable=False)
    state_changed_at = models.DateTimeField(default=timezone.now, editable=False)
    consecutive_failures = models.PositiveIntegerField(default=0, editable=False)
    next_retry_at = models.DateTimeField(null=True, blank=True, editable=False)
    paused_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Set by recover ("now" / "timestamp"): the start task re-runs the initial query here.
    resume_from = models.DateTimeField(null=True, blank=True, editable=False)
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

    def clean(self) -> None:
        """Refuse an end timestamp that is not after the start timestamp."""
        super().clean()
        if self.end_at is not None and self.start_at is not None and self.end_at <= self.start_at:
            raise ValidationError({"end_at": "the end timestamp must be after the start timestamp"})

    def low_watermark(self) -> datetime | None:
        """Return the oldest watermark of an unfinished partition (or the end once all finished)."""
        from streams.status import low_watermark

        return low_watermark(self)

    def holding_partition(self):
        """Return the unfinished partition whose watermark holds the stream back, or None."""
        from streams.status import holding_partition

        return holding_partition(self)

    def lag_seconds(self) -> float | None:
        """Return how far, in seconds, the low watermark is behind now (or the end)."""
        from streams.status import lag_seconds

        return lag_seconds(self)

    def partitions_by_state(self) -> dict[str, int]:
        """Return partition counts for every partition state."""
        from streams.status import partitions_by_state

        return partitions_by_state(self)

    @property
    def data_records(self) -> int:
        """Return the number of data change records read over all partitions."""
        from streams.status import data_records

        return data_records(self)

    def reached_end(self) -> bool:
        """Return True when the stream has an end and every partition finished there."""
        from streams.status import reached_end

        return reached_end(self)


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

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="errors")
    partition = models.ForeignKey(
        "partitions.Partition", on_delete=models.SET_NULL, null=True, blank=True, related_name="errors"
    )
    at = models.DateTimeField(default=timezone.now, db_index=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    code = models.CharField(max_length=100, blank=True)
    message = models.TextField()
    attempt = models.PositiveIntegerField(default=1)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.code}: {self.message[:60]}"


class Report(models.Model):
    """One Spark report run for a stream and time range: its progress, outcome and result tables."""

    class Status(models.TextChoices):
        QUEUED = "QUEUED", "Queued"
        RUNNING = "RUNNING", "Running"
        DONE = "DONE", "Done"
        FAILED = "FAILED", "Failed"

    class Kind(models.TextChoices):
        # The job's --report values (spark_tasks/main.py REPORTS).
        ALL = "all", "All reports"
        THROUGHPUT = "throughput", "Throughput"
        LATENCY = "latency", "Latency"
        TRANSACTIONS = "transactions", "Transaction shape"
        CHURN = "churn", "Partition churn"
        COST = "cost", "Cost"

    stream = models.ForeignKey(Stream, on_delete=models.CASCADE, related_name="reports")
    since = models.DateTimeField(help_text="first commit timestamp included")
    until = models.DateTimeField(help_text="commit timestamps before this are included")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.ALL)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    step = models.CharField(max_length=200, blank=True)
    error = models.TextField(blank=True)
    summary = models.JSONField(default=dict, blank=True)
    results = models.JSONField(default=dict, blank=True, help_text="{table name: [row objects]}")
    assumptions = models.JSONField(default=list, blank=True, help_text="the price model used, with sources")
    requested_by = models.CharField(max_length=150, help_text="user name or task name")
    worker = models.CharField(max_length=255, blank=True, help_text="the Celery worker running it")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    output_dir = models.CharField(max_length=500, blank=True)

    DAILY_BY = "schedule_daily_reports_task"

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(until__gt=models.F("since")),
                name="report_until_after_since",
                violation_error_message="the end of the range must be after its start",
            ),
            # Beat may fire twice (or two beats may run): one daily report per stream and day.
            models.UniqueConstraint(
                fields=["stream", "since", "until"],
                condition=models.Q(requested_by="schedule_daily_reports_task"),
                name="report_one_daily_per_stream_day",
            ),
        ]

    def __str__(self) -> str:
        return f"report {self.pk} of {self.stream_id} ({self.status})"

    @property
    def percent(self) -> int:
        """Return the progress as a whole percentage (100 once done)."""
        if self.status == self.Status.DONE:
            return 100
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0

    @property
    def finished(self) -> bool:
        """Return True once the report is DONE or FAILED."""
        return self.status in (self.Status.DONE, self.Status.FAILED)
