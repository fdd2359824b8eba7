"""Reports: one Spark job run over a stream's landed records, its progress and its result tables."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from streams.models import Stream


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
    # When its task was last sent (QUEUED), and when the worker running it last said it is
    # alive (RUNNING): the database's times, for beat's sweep of reports left behind.
    sent_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    output_dir = models.CharField(max_length=500, blank=True)

    DAILY_BY = "schedule_daily_reports_task"

    class Meta:
        # The table keeps the name it had when reports lived in the streams app.
        db_table = "streams_report"
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
