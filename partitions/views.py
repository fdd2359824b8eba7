"""Dashboard pages of partitions: a stream's partition table and tree, and one partition's page."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Case, Count, IntegerField, Value, When
from django.http import Http404, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from streams.access import can_operate
from streams.models import AuditEntry, Stream, StreamError
from streams.times import parse_form_time

from .models import LagSample, Partition, PartitionEdge
from .pipeline import partition_actions
from .pipeline.queue import NAMED
from .progress import horizon, partition_lag
from .sources import KINDS

P = Partition.State
PAGE_SIZE = 25
SORTS = {
    # Lag is now − watermark, so the oldest unfinished watermark lags most; finished last.
    "lag": (Case(When(state=P.FINISHED, then=Value(1)), default=Value(0), output_field=IntegerField()),
            "watermark", "id"),
    "start": ("start_at", "id"),
    "-start": ("-start_at", "-id"),
}  # fmt: skip
# A late partition of a merge-heavy stream can have thousands of ancestors: list this many.
ANCESTOR_LIMIT = 200
WATERMARK_POINTS = 2000


def _table_filters(params: QueryDict) -> dict:
    """Return the table's cleaned filter, sort and page parameters (unknown values ignored)."""
    state = params.get("state", "")
    stalled = params.get("stalled", "")
    sort = params.get("sort", "lag")
    return {
        "state": state if state in P.values else "",
        "stalled": stalled if stalled in ("yes", "no") else "",
        "sort": sort if sort in SORTS else "lag",
        "page": params.get("page", "1"),
    }


def partition_table_context(request, stream: Stream) -> dict:
    """Return one page of the stream's partitions, filtered and sorted by the request (two queries)."""
    chosen = _table_filters(request.GET)
    rows = Partition.objects.filter(stream=stream)
    if chosen["state"]:
        rows = rows.filter(state=chosen["state"])
    if chosen["stalled"]:
        rows = rows.filter(stalled=chosen["stalled"] == "yes")
    rows = rows.order_by(*SORTS[chosen["sort"]]).defer("stall_evidence")
    page = Paginator(rows, PAGE_SIZE).get_page(chosen["page"])
    until = horizon(stream)
    for partition in page:
        partition.lag_seconds = partition_lag(partition.state, partition.watermark, until)
    query = {k: v for k, v in chosen.items() if v and k != "page"}
    return {
        "stream": stream,
        "page": page,
        "filters": chosen,
        "states": P.values,
        "table_url": reverse("stream-partitions", args=[stream.pk]),
        "table_query": "&".join(f"{k}={v}" for k, v in query.items()),
    }


@login_required
def stream_partitions(request, pk: int):
    """Return the partition table alone: the filter form, sort and pagination swap it in place."""
    stream = get_object_or_404(Stream, pk=pk)
    return render(request, "partitions/_table.html", partition_table_context(request, stream))


def _natural(text: str) -> tuple:
    """Return a sort key that orders the numbers in a text by value: shard:2 before shard:10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def in_order(partitions) -> list[Partition]:
    """Return partitions by start, then label or token in natural order (shards read 0, 1, 2, ...)."""
    return sorted(partitions, key=lambda p: (p.start_at, _natural(p.label or p.token)))


def _nodes(partitions: list[Partition]) -> list[dict]:
    """Return tree nodes for partitions: child counts and, for merged ones, their parents."""
    ids = [p.pk for p in partitions]
    counts = dict(
        PartitionEdge.objects.filter(parent_id__in=ids)
        .values_list("parent_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    parents = defaultdict(list)
    for child_id, token, parent_id in PartitionEdge.objects.filter(child_id__in=ids).values_list(
        "child_id", "parent__token", "parent_id"
    ):
        parents[child_id].append((parent_id, token))
    return [
        {
            "p": p,
            "children": counts.get(p.pk, 0),
            "merged_from": parents[p.pk] if len(parents[p.pk]) > 1 else [],
        }
        for p in partitions
    ]


@login_required
def stream_tree(request, pk: int):
    """Return the partition tree's roots, opened one level; deeper levels load when opened."""
    stream = get_object_or_404(Stream, pk=pk)
    roots = in_order(Partition.objects.filter(stream=stream, parent_edges__isnull=True))
    return render(request, "partitions/_tree.html", {"nodes": _nodes(roots), "open": True})


@login_required
def partition_children(request, pk: int):
    """Return one partition's children as tree nodes (a merged child says what it merged from)."""
    partition = get_object_or_404(Partition, pk=pk)
    children = in_order(Partition.objects.filter(parent_edges__parent=partition))
    return render(request, "partitions/_tree.html", {"nodes": _nodes(children), "open": False})


def ancestors(partition: Partition) -> tuple[list[list[int]], set[int]]:
    """Return the partition's ancestors by generation (parents first) and the roots among them.

    All the stream's edges are read in one query and walked in memory, so the cost
    does not grow with the depth of the lineage.
    """
    parents_of = defaultdict(list)
    for parent_id, child_id in PartitionEdge.objects.filter(stream_id=partition.stream_id).values_list(
        "parent_id", "child_id"
    ):
        parents_of[child_id].append(parent_id)
    seen, generations, frontier = {partition.pk}, [], [partition.pk]
    while frontier:
        nxt = sorted({p for c in frontier for p in parents_of[c]} - seen)
        if not nxt:
            break
        seen.update(nxt)
        generations.append(nxt)
        frontier = nxt
    roots = {pid for gen in generations for pid in gen if not parents_of[pid]}
    return generations, roots


def _ancestor_context(partition: Partition) -> dict:
    generations, roots = ancestors(partition)
    listed = [pid for gen in generations for pid in gen][:ANCESTOR_LIMIT]
    by_id = Partition.objects.only("id", "token", "state", "start_at").in_bulk(listed)
    rows, shown = [], 0
    for depth, gen in enumerate(generations, start=1):
        members = [by_id[pid] for pid in gen if pid in by_id]
        if members:
            rows.append({"depth": depth, "partitions": members})
        shown += len(members)
    total = sum(len(gen) for gen in generations)
    return {"ancestor_rows": rows, "ancestor_total": total, "ancestors_hidden": total - shown,
            "root_ids": roots}  # fmt: skip


def watermark_history(partition: Partition) -> list[dict]:
    """Return the watermark values that were recorded for the partition, oldest first.

    Only what is stored: the lag samples taken while this partition held the stream's
    low watermark (their low watermark is its watermark), its start, and its current value.
    """
    points = [{"at": partition.start_at, "watermark": partition.start_at, "source": "start"}]
    held = LagSample.objects.filter(stream_id=partition.stream_id, holding_partition=partition)
    for at, low in held.order_by("-at").values_list("at", "low_watermark")[:WATERMARK_POINTS]:
        if low is not None:
            points.append({"at": at, "watermark": low, "source": "lag sample (held the stream back)"})
    seen = partition.last_progress_at or partition.finished_at or partition.watermark
    points.append({"at": seen, "watermark": partition.watermark, "source": "current"})
    return sorted(points, key=lambda p: p["at"])


def cursor_rows(partition: Partition) -> list[tuple[str, str]]:
    """Return the partition's resume state as its kind shows it (Bigtable: tokens by row range)."""
    kind = KINDS.get(partition.stream.source_kind)
    return kind.cursor_rows(partition.cursor or {}) if kind is not None else []


@login_required
def partition_detail(request, pk: int):
    """Show one partition: lineage links, ancestors, watermark history, counters, lease and stall."""
    partition = get_object_or_404(Partition.objects.select_related("stream"), pk=pk)
    history = watermark_history(partition)
    now = timezone.now()
    errors = StreamError.objects.filter(stream_id=partition.stream_id)
    context = {
        "partition": partition,
        "stream": partition.stream,
        "parents": in_order(Partition.objects.filter(child_edges__child=partition)),
        "children": in_order(Partition.objects.filter(parent_edges__parent=partition)),
        "history": history,
        "history_json": [
            {**p, "at": p["at"].isoformat(), "watermark": p["watermark"].isoformat()} for p in history
        ],
        "lag_seconds": partition_lag(partition.state, partition.watermark, horizon(partition.stream, now)),
        "lease_live": bool(
            partition.lease_owner and partition.lease_expires_at and partition.lease_expires_at > now
        ),
        "errors": list(errors.filter(partition_token=partition.token)[:20]),
        "cursor_rows": cursor_rows(partition),
        "can_operate": can_operate(request.user),
        "audit_entries": list(
            AuditEntry.objects.filter(partition_id=partition.pk).order_by("-at", "-id")[:50]
        ),
        **_ancestor_context(partition),
    }
    return render(request, "partitions/detail.html", context)


@login_required
@require_POST
def partition_action(request, pk: int, action: str):
    """Release the partition's lease or re-read it from a time, then show the outcome on its page."""
    if action not in ("release-lease", "reread"):
        raise Http404("no such action")
    if not can_operate(request.user):
        raise PermissionDenied("only operators may act on partitions")
    partition = get_object_or_404(Partition, pk=pk)
    by = request.user.get_username()
    try:
        if action == "release-lease":
            partition_actions.release_lease(partition.pk, by, NAMED)
            messages.success(
                request, "Lease released: the partition's read is queued for the next free reader."
            )
        else:
            at = _form_time(request.POST.get("from", ""), partition)
            done = partition_actions.reread(partition.pk, at, by, NAMED)
            messages.success(request, f"Re-reading from {done.watermark:%Y-%m-%d %H:%M:%S} UTC.")
    except partition_actions.ActionRefused as refused:
        messages.error(request, str(refused))
    return redirect(reverse("partition-detail", args=[pk]))


def _form_time(raw: str, partition: Partition):
    """Return the form's UTC time, or raise ActionRefused saying what is wrong with it.

    The form shows whole seconds: its default, the start truncated, means the start itself.
    """
    try:
        at = parse_form_time(raw.strip())
    except ValueError as unreadable:
        raise partition_actions.ActionRefused(
            f"the time to re-read from: {unreadable}", partition.state
        ) from None
    return partition.start_at if timedelta(0) < partition.start_at - at < timedelta(seconds=1) else at
