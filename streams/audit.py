"""The audit log: who did what to a stream or a partition, when, and what it was before.

Every operator action writes one AuditEntry in the transaction that does it, so an
action that fails leaves no entry and an entry always names a thing done.
"""

from __future__ import annotations

from typing import Any

from .models import AuditEntry, Stream


def record(
    stream: Stream,
    action: str,
    by: str,
    detail: str = "",
    before: dict[str, Any] | None = None,
    partition_id: int = 0,
    partition_token: str = "",
) -> AuditEntry:
    """Write one entry of the audit log and return it."""
    return AuditEntry.objects.create(
        stream=stream,
        action=action,
        by=by[:150],
        detail=detail,
        before=before or {},
        partition_id=partition_id,
        partition_token=partition_token,
    )


def stream_before(stream: Stream) -> dict[str, Any]:
    """Return what a stream action acts on: its state and why it is in it."""
    return {"state": stream.state, "state_reason": stream.state_reason}
