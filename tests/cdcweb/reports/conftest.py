"""Fixtures of the report tests: token clients, a new stream, reports in each status."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from cdcweb.reports.models import Report
from streams.models import Stream
from tests.factories import make_stream

SINCE = datetime(2026, 11, 20, tzinfo=UTC)
UNTIL = datetime(2026, 11, 21, tzinfo=UTC)
RESULTS = {
    "throughput": [
        {"stream_name": "orders", "table_name": "Orders", "minute": "2026-11-20T10:00:00.000000Z",
         "records": 3, "mods": 5, "inserts": 5, "updates": 0, "deletes": 0, "bytes": 120, "transactions": 2},
        {"stream_name": "orders", "table_name": "Items", "minute": "2026-11-20T10:00:00.000000Z",
         "records": 1, "mods": 2, "inserts": 1, "updates": 1, "deletes": 0, "bytes": 40, "transactions": 1},
    ],
    "latency_by_minute": [
        {"stream_name": "orders", "minute": "2026-11-20T10:00:00.000000Z", "records": 4, "p50_seconds": 0.5,
         "p95_seconds": 1.5, "p99_seconds": 2.0, "max_seconds": 2.0},
    ],
    "transaction_shape": [{"stream_name": "orders", "measure": "records", "value": 2, "transactions": 2}],
    "cost": [
        {"stream_name": "orders", "table_name": "Orders", "day": "2026-11-20", "records": 3, "mods": 5,
         "bytes": 120, "overhead_factor": 1.4, "covered_hours": 0.1, "retained_gib": 1e-7,
         "storage_usd": 1e-9, "compute_usd_low": 0.01, "compute_usd_high": 0.02,
         "total_usd_low": 0.01, "total_usd_high": 0.02},
    ],
}  # fmt: skip
ASSUMPTIONS = [
    {"name": "storage_usd_per_gib_month", "value": 0.3, "unit": "USD per GiB-month",
     "source": "Spanner regional SSD, us-central1", "note": "list price, verify for your contract"},
]  # fmt: skip


@pytest.fixture
def api(users):
    """Return a factory of API clients authenticated by token as a role (None: anonymous)."""

    def make(role: str | None) -> APIClient:
        client = APIClient()
        if role:
            client.credentials(HTTP_AUTHORIZATION=f"Token {AuthToken.objects.create(user=users[role])[1]}")
        return client

    return make


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """Record the ids of the reports whose task is sent (by name, through streams.dispatch)."""
    ids: list[int] = []

    def send(name: str, args: tuple) -> None:
        assert name == "cdcweb.reports.tasks.run_report_task"
        ids.append(args[0])

    monkeypatch.setattr("streams.dispatch.send", send)
    return ids


@pytest.fixture
def new_stream(db) -> Stream:
    """Return a stream named orders that has not started and starts now: no partitions, no samples."""
    return make_stream("orders", start_at=timezone.now())


@pytest.fixture
def done_report(new_stream) -> Report:
    """Return a DONE report with small result tables and its assumptions."""
    summary = {"totals": {"records": 4, "mods": 7, "transactions": 3, "bytes": 160}, "tables": {}}
    for name, rows in RESULTS.items():
        summary["tables"][name] = {"columns": list(rows[0]), "rows": len(rows)}
    return Report.objects.create(
        stream=new_stream, since=SINCE, until=UNTIL, status=Report.Status.DONE, requested_by="otto",
        summary=summary, results=RESULTS, assumptions=ASSUMPTIONS, progress_done=11, progress_total=11,
    )  # fmt: skip


@pytest.fixture
def running_report(new_stream) -> Report:
    """Return a report RUNNING at step 4 of 11."""
    return Report.objects.create(
        stream=new_stream, since=SINCE, until=UNTIL, status=Report.Status.RUNNING, requested_by="otto",
        progress_done=4, progress_total=11, step="latency_by_minute",
    )  # fmt: skip
