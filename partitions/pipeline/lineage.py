"""Store the children a partition's read announced, and the edges of the lineage (DESIGN §5 step 4).

Runs inside the checkpoint that finishes the parent. Each child is inserted if absent
(a merge's child is announced by every parent) and gets an edge from each parent; its
cursor gathers what each parent hands over (Bigtable continuation tokens), under the
child's row lock, so two parents finishing at once both count.

Two rules decide when a child is stored:

- A child whose source names its parents (Spanner) is stored only once every named
  parent exists here: a parent not stored yet (its own parent has not finished) will
  announce the same child when it finishes. Storing it earlier would let the
  parent-wait rule see one finished parent and schedule the child too soon.
- The kind picks the token (``ReadKind.place_child``): a change stream's token is its
  own; a Bigtable row range that comes back after it finished is a new generation.
- Placing is idempotent: a parent with an edge to the child (any generation of its
  token) has handed its part over already, so handing it again changes nothing, not
  even once the child has started (a new generation would wait forever).
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q

from partitions import states
from partitions.models import Partition, PartitionEdge
from partitions.sources.base import Ended, NewPartition
from partitions.sources.kinds import ReadKind
from streams.models import Stream

from .readers import state_of

P = Partition.State


def store_children(parent: Partition, ended: Ended, kind: ReadKind) -> None:
    """Insert each announced child (or add to the stored one), with its edges from its parents."""
    for child in ended.children:
        _store(parent, child, kind)


def _store(parent: Partition, child: NewPartition, kind: ReadKind) -> None:
    stream_id = parent.stream_id
    named = {*child.parents, parent.token}
    parents = dict(Partition.objects.filter(stream_id=stream_id, token__in=named).values_list("token", "pk"))
    if not named <= parents.keys():
        return  # a named parent is not stored yet: it announces the child when it finishes
    # Every stored partition that may be this child: the same token, or a generation of it.
    same = Partition.objects.filter(stream_id=stream_id).filter(Q(token__startswith=child.token))
    known = {token: cursor for token, cursor in same.values_list("token", "cursor")}
    ours = [token for token in known if kind.is_generation(token, child.token)]
    if PartitionEdge.objects.filter(parent_id=parents[parent.token], child__token__in=ours).exists():
        return  # this parent handed its part over already (a retried checkpoint): nothing changes
    token, stored = kind.place_child(child, known)
    if not stored:
        created = Partition(
            stream_id=stream_id, token=token, state=states.INITIAL["child"], start_at=child.start,
            watermark=child.start, cursor=kind.merge_cursor({}, child.cursor), label=child.label,
        )  # fmt: skip
        Partition.objects.bulk_create([created], ignore_conflicts=True)
    row = _join(stream_id, token, child, kind)
    edges = [PartitionEdge(stream_id=stream_id, parent_id=parents[p], child_id=row.pk) for p in named]
    PartitionEdge.objects.bulk_create(edges, ignore_conflicts=True)


def _join(stream_id: int, token: str, child: NewPartition, kind: ReadKind) -> Partition:
    """Return the stored child with this parent's part of its cursor and start added (row locked)."""
    row = Partition.objects.select_for_update(no_key=True, of=("self",)).get(stream_id=stream_id, token=token)
    cursor = kind.merge_cursor(row.cursor, child.cursor)
    # A merged child starts where its earliest parent ended (Bigtable parents may differ).
    start = min(row.start_at, child.start) if row.state == P.CREATED else row.start_at
    if cursor != row.cursor or start != row.start_at:
        row.cursor, row.start_at, row.watermark = cursor, start, min(row.watermark, start)
        row.save(update_fields=["cursor", "start_at", "watermark"])
    return row


def complete_at_end(stream: Stream, waiting: list[Partition], kind: ReadKind) -> None:
    """Complete the cursors of children that wait on parents which read on to the stream's end.

    A bounded stream's end can fall between the closes of a merge's parents (Bigtable):
    the one still open finished at the end without children, so it never hands over.
    The kind says whether such partitions' last tokens complete a waiting child; if so
    they become its parents. Call it with the children's rows locked.
    """
    has_child = PartitionEdge.objects.filter(parent=OuterRef("pk"))
    ended = [
        state_of(p)
        for p in Partition.objects.filter(stream=stream, state=P.FINISHED, end_at=stream.end_at)
        .exclude(Exists(has_child))
        .order_by()
    ]
    if not ended:
        return
    pks = {p.token: p.pk for p in Partition.objects.filter(stream=stream, token__in=[e.token for e in ended])}
    for child in waiting:
        completed = kind.complete_at_end(state_of(child), ended)
        if completed is None:
            continue
        child.cursor, used = completed
        child.save(update_fields=["cursor"])
        edges = [PartitionEdge(stream_id=stream.pk, parent_id=pks[t], child_id=child.pk) for t in used]
        PartitionEdge.objects.bulk_create(edges, ignore_conflicts=True)
