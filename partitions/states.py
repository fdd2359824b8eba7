"""The partition state machine: every change of Partition.state goes through move() or check().

    from        to          when                                              who
    (new)       SCHEDULED   a root found by the start task                    starting.create_roots
    (new)       CREATED     a child announced by a parent that ended          checkpoint (children)
    CREATED     SCHEDULED   every parent FINISHED (the parent-wait rule)      scheduling.schedule_ready
    SCHEDULED   RUNNING     a reader took the lease                          leases.take
    RUNNING     RUNNING     a reader took the lease again (next window)       leases.take
    RUNNING     FINISHED    its read ended it, in the checkpoint that         checkpoint.save_progress
                            stores its children (or at the stream's end)
    FINISHED    SCHEDULED   an operator re-reads it from a time               partition_actions.reread

Nothing else moves back: a recovery from now or a timestamp deletes the unfinished
partitions and finds new roots instead (starting.discard_unfinished).
"""

from __future__ import annotations

from django.db.models import QuerySet

from .models import Partition

P = Partition.State
MOVES: frozenset[tuple[str, str]] = frozenset(
    {
        (P.CREATED, P.SCHEDULED),
        (P.SCHEDULED, P.RUNNING),
        (P.RUNNING, P.RUNNING),
        (P.RUNNING, P.FINISHED),
        (P.FINISHED, P.SCHEDULED),
    }
)
INITIAL = {"root": P.SCHEDULED, "child": P.CREATED}


class PartitionMoveNotAllowed(ValueError):
    """A partition state change the table above forbids."""


def allowed_from(to_state: str) -> list[str]:
    """Return the states a partition may move to `to_state` from."""
    return sorted(src for src, dst in MOVES if dst == to_state)


def check(current: str, to_state: str) -> None:
    """Raise PartitionMoveNotAllowed unless `current -> to_state` is in the table."""
    if (current, to_state) not in MOVES:
        raise PartitionMoveNotAllowed(f"a partition cannot move from {current} to {to_state}")


def move(partitions: QuerySet, to_state: str, **fields) -> int:
    """Move the partitions that may make the move to `to_state` (one conditional UPDATE); return how many.

    Rows in any other state are left alone, so two callers racing on one row cannot
    both move it: the row count says who did.
    """
    return partitions.filter(state__in=allowed_from(to_state)).update(state=to_state, **fields)
