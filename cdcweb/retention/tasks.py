"""Beat's retention job: a thin task around cdcweb.retention.purge (on the housekeeping queue)."""

from __future__ import annotations

from celery import shared_task

from . import purge


@shared_task(acks_late=True)
def purge_old_data_task() -> dict[str, int]:
    """Delete errors, delivery attempts, resolved alerts, reports and landed files past their ages."""
    return purge.run()
